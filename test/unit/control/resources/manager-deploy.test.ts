import test from 'ava';
import type { DeployProgress } from '../../../../control/resources/types.js';
import { BROKEN_SERVICE_TIME, echoTask, ownersPicture, startResourceManager } from '../../../helpers/resources.js';
import { echo } from '../../../helpers/local-platform.js';

test.serial('two apps declaring equivalent tasks share one deployment with usage 2', async (t) => {
  const { rm, store, platform } = startResourceManager(t);
  const [a] = await rm.deploy([echoTask(0)]);
  const [b] = await rm.deploy([echoTask(0)]);
  t.is(a, b);
  t.like(await store.getTask(a!), { usage: 2, state: 'ready' });
  t.is((await store.listTasks()).length, 1);
  t.is(platform.processes().length, 1);
  const [route] = await store.listExecutors(a);
  t.like(route, { state: 'ready' });
  t.deepEqual((await echo(route!.url, 'x')).body, { echo: 'x' });
});

test.serial('releasing one of two users leaves the task running', async (t) => {
  const { rm, store } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(0)]);
  await rm.deploy([echoTask(0)]);
  await rm.release([id!]);
  t.like(await store.getTask(id!), { usage: 1, state: 'ready' });
  const [route] = await store.listExecutors(id);
  t.deepEqual((await echo(route!.url, 'still')).body, { echo: 'still' });
});

test.serial('releasing the last user stops the executors, deletes routes and task, and frees the devices', async (t) => {
  const { rm, store, platform } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(0)]);
  await rm.deploy([echoTask(0)]);
  t.is(ownersPicture(rm, { [id!]: 'e' }), 'e...');
  await rm.release([id!]);
  await rm.release([id!]);
  t.is(await store.getTask(id!), undefined);
  t.deepEqual(await store.listExecutors(), []);
  t.deepEqual(platform.processes(), []);
  t.is(ownersPicture(rm), '....');
});

test.serial('a deploy whose second task fails to start leaves nothing behind', async (t) => {
  const { rm, store, platform } = startResourceManager(t);
  const err = await t.throwsAsync(rm.deploy([echoTask(0), echoTask(BROKEN_SERVICE_TIME)]));
  t.regex(err!.message, /cannot deploy echo-999ms .*exited with code 3 while starting.*nothing was deployed/s);
  t.is((err as { code?: string }).code, 'EXECUTOR_START_FAILED');
  t.deepEqual(await store.listTasks(), []);
  t.deepEqual(await store.listExecutors(), []);
  t.deepEqual(platform.processes(), []);
  t.is(ownersPicture(rm), '....');
});

test.serial('a failed deploy restores the usage of a task it shared instead of tearing it down', async (t) => {
  const { rm, store } = startResourceManager(t);
  const [shared] = await rm.deploy([echoTask(0)]);
  await t.throwsAsync(rm.deploy([echoTask(0), echoTask(BROKEN_SERVICE_TIME)]));
  t.like(await store.getTask(shared!), { usage: 1, state: 'ready' });
  t.is((await store.listTasks()).length, 1);
  const [route] = await store.listExecutors(shared);
  t.deepEqual((await echo(route!.url, 'ok')).body, { echo: 'ok' });
  t.is(ownersPicture(rm, { [shared!]: 's' }), 's...');
});

test.serial('a deploy that needs more devices than are free fails with 409 INSUFFICIENT_DEVICES and is rolled back', async (t) => {
  const { rm, store, platform } = startResourceManager(t, { devices: 1 });
  const err = await t.throwsAsync(rm.deploy([echoTask(0), echoTask(1)]));
  t.like(err, { code: 'INSUFFICIENT_DEVICES', status: 409 });
  t.deepEqual(await store.listTasks(), []);
  t.deepEqual(platform.processes(), []);
  t.is(ownersPicture(rm), '.');
});

test.serial('progress reports deploying then ready for a new task and shared for an existing one', async (t) => {
  const { rm } = startResourceManager(t);
  await rm.deploy([echoTask(0)]);
  const seen: DeployProgress[] = [];
  const [, id] = await rm.deploy([echoTask(0), echoTask(5)], (p) => seen.push(p));
  t.deepEqual(seen.filter((p) => p.task === 'echo-0ms').map((p) => p.state), ['shared']);
  t.deepEqual(seen.filter((p) => p.task === 'echo-5ms').map((p) => [p.state, p.taskId]), [['deploying', id], ['ready', id]]);
});

test.serial('a failing task is reported through progress with its error', async (t) => {
  const { rm } = startResourceManager(t);
  const seen: DeployProgress[] = [];
  await t.throwsAsync(rm.deploy([echoTask(BROKEN_SERVICE_TIME)], (p) => seen.push(p)));
  t.deepEqual(seen.map((p) => p.state), ['deploying', 'failed']);
  t.regex(seen[1]!.message!, /exit-at-once fixture refuses to start/);
});

test.serial('concurrent deploys of apps sharing a task start it once', async (t) => {
  const { rm, store, platform } = startResourceManager(t);
  const [[a], [b], [c]] = await Promise.all([rm.deploy([echoTask(0)]), rm.deploy([echoTask(0)]), rm.deploy([echoTask(0)])]);
  t.true(a === b && b === c);
  t.like(await store.getTask(a!), { usage: 3, state: 'ready' });
  t.is(platform.processes().length, 1);
  t.is((await store.listExecutors()).length, 1);
});

test.serial('deploy returns the task ids in the order given and counts a task declared twice once', async (t) => {
  const { rm, store } = startResourceManager(t);
  const ids = await rm.deploy([echoTask(3), echoTask(0), echoTask(3)]);
  t.is(ids[0], ids[2]);
  t.not(ids[0], ids[1]);
  t.like(await store.getTask(ids[0]!), { usage: 1 });
});

test.serial('releasing an unknown task id is ignored', async (t) => {
  const { rm } = startResourceManager(t);
  await t.notThrowsAsync(rm.release(['echobasetask-000000000000']));
});

test.serial('listTasks reports each task with its name, usage and executors', async (t) => {
  const { rm } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(7)]);
  const [status] = await rm.listTasks();
  t.like(status, { taskId: id, name: 'echo-7ms', usage: 1, state: 'ready', taskClass: 'EchoBaseTask' });
  t.deepEqual(status!.executors.map((e) => e.state), ['ready']);
});

test.serial('close stops every executor and deletes the routes but keeps the tasks for a later recover()', async (t) => {
  const { rm, store, platform } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(0)]);
  await rm.close();
  t.like(await store.getTask(id!), { usage: 1, state: 'ready' });
  t.deepEqual(await store.listExecutors(), []);
  t.deepEqual(platform.processes(), []);
  t.like(await t.throwsAsync(rm.deploy([echoTask(0)])), { code: 'RESOURCES_CLOSED', status: 503 });
});
