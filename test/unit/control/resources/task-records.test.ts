import test from 'ava';
import { EchoStreamTask, EchoTask } from '../../../../functions/tasks/echo.js';
import { unitTaskKey } from '../../../../functions/sdk/index.js';
import { newTaskRecord, taskFromRecord } from '../../../../control/resources/task-records.js';
import { taskIdOf as taskIdOfTask } from '../../../../control/store/task-id.js';

test('equivalent tasks of different classes under one root get the same task id', (t) => {
  t.is(taskIdOfTask(new EchoTask({ serviceTimeMs: 3 })), taskIdOfTask(new EchoStreamTask({ serviceTimeMs: 3 })));
  t.not(taskIdOfTask(new EchoTask({ serviceTimeMs: 3 })), taskIdOfTask(new EchoTask({ serviceTimeMs: 4 })));
});

test('a task record names the root class and keeps the concrete class for rebuilding', (t) => {
  const r = newTaskRecord(new EchoStreamTask({ serviceTimeMs: 2 }));
  t.like(r, { taskClass: 'EchoBaseTask', state: 'deploying', devices: [] });
  t.like(r.task, { class: 'EchoStreamTask', config: { serviceTimeMs: 2 }, descriptor: null });
});

test('taskFromRecord rebuilds an equivalent task of the stored class', (t) => {
  const task = new EchoStreamTask({ serviceTimeMs: 2 });
  const rebuilt = taskFromRecord({ ...newTaskRecord(task), usage: 1 });
  t.true(rebuilt instanceof EchoStreamTask);
  t.is(unitTaskKey(rebuilt), unitTaskKey(task));
});

test('taskFromRecord falls back to a registered class with the same root when the stored class is unknown', (t) => {
  const record = { ...newTaskRecord(new EchoTask({ serviceTimeMs: 1 })), usage: 1 };
  const rebuilt = taskFromRecord({ ...record, task: { ...(record.task as object), class: 'GoneTask' } });
  t.is(rebuilt.rootClass.name, 'EchoBaseTask');
  t.is(taskIdOfTask(rebuilt), record.taskId);
});

test('taskFromRecord fails clearly when no registered class has the root', (t) => {
  const record = { ...newTaskRecord(new EchoTask({ serviceTimeMs: 1 })), usage: 1, taskClass: 'NoSuchRoot' };
  t.throws(() => taskFromRecord({ ...record, task: { ...(record.task as object), class: 'Nope' } }), { message: /no registered unit task class has root NoSuchRoot/ });
});
