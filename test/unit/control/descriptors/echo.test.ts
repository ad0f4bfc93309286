import test from 'ava';
import { EchoTask } from '../../../../functions/tasks/echo.js';
import { echoDescriptor } from '../../../../control/descriptors/echo.js';

test('an echo task with maxConcurrency launches its executor with that limit and names it', (t) => {
  const task = new EchoTask({ serviceTimeMs: 20, maxConcurrency: 2 });
  t.deepEqual(echoDescriptor.launch(task).args, ['--service-time-ms', '20', '--max-concurrency', '2']);
  t.is(echoDescriptor.executorName(task), 'echo-20ms-x2');
});

test('an echo task without maxConcurrency keeps its launch and name (no limit)', (t) => {
  const task = new EchoTask({ serviceTimeMs: 0 });
  t.deepEqual(echoDescriptor.launch(task).args, ['--service-time-ms', '0']);
  t.is(task.name, 'echo-0ms');
});
