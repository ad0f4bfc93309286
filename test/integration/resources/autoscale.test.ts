/**
 * Autoscaling on a real local platform (echo executors as child processes, the in-memory Store), with short
 * windows and a fast tick. Every wait is for an observable condition with a generous bound (loaded CI machines).
 */
import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { startCornserve } from '../../../control/compose/up.js';
import { echoAppSource, startPlatform, type TestPlatform } from '../../helpers/platform.js';

const fast = { tickMs: 300, autoscaler: { stableWindowMs: 4000, panicWindowMs: 1500, scaleDownDelayMs: 1000 } };

async function platform(t: import('ava').ExecutionContext, devices = 4): Promise<TestPlatform> {
  const p = await startPlatform({ port: 0, devices, autoscale: fast });
  t.teardown(() => p.stop());
  return p;
}

const taskOf = async (p: TestPlatform) => (await p.resources.listTasks())[0]!;

test('an unknown task gets 404, min > max and max beyond the pool 422 naming the field', async (t) => {
  const p = await platform(t);
  await p.register(echoAppSource('as-bad'));
  const { taskId } = await taskOf(p);
  const unknown = await p.admin('/task/autoscale', { task_id: 'no-such-task', min: 1, max: 2 });
  t.is(unknown.status, 404);
  const minOverMax = await p.admin('/task/autoscale', { task_id: taskId, min: 3, max: 2 });
  t.is(minOverMax.status, 422);
  t.regex(JSON.stringify(await minOverMax.json()), /min/);
  const beyond = await p.admin('/task/autoscale', { task_id: taskId, min: 1, max: 5 });
  t.is(beyond.status, 422);
  const body = (await beyond.json()) as { error: { details?: { field?: string }; message: string } };
  t.is(body.error.details?.field, 'max');
});

test('a task with min 0 scales to zero when idle, and a request then is answered within its deadline', async (t) => {
  const p = await platform(t);
  await p.register(echoAppSource('as-zero', 5));
  const { taskId } = await taskOf(p);
  const set = await p.admin('/task/autoscale', { task_id: taskId, min: 0, max: 2, target: 2 });
  t.is(set.status, 200);
  await waitUntil('the idle task to reach zero executors', async () => (await p.store.listExecutors(taskId)).length === 0, { timeoutMs: 60_000, intervalMs: 200 });
  const res = await p.invoke('as-zero', { text: 'wake up' }, { timeoutMs: 90_000 });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { echo: 'wake up' });
  const status = await p.resources.status(taskId);
  t.truthy(status?.autoscale?.coldStart, JSON.stringify(status?.autoscale));
  t.regex(status!.autoscale!.lastDecision!.reason, /scale from zero/);
});

test('sustained load scales a task up, and removed load brings it back to min with every request answered', async (t) => {
  const p = await platform(t);
  await p.register(echoAppSource('as-load', 100));
  const { taskId } = await taskOf(p);
  let stop = false;
  const statuses: number[] = [];
  // 8 closed-loop clients at 100 ms each: about 8 in flight, 4 executors' worth at target 2.
  const clients = Array.from({ length: 8 }, async () => {
    while (!stop) statuses.push((await p.invoke('as-load', { text: 'x' }, { timeoutMs: 60_000 })).status);
  });
  await waitUntil('the task to scale up under load', async () => (await p.store.listExecutors(taskId)).filter((r) => r.state === 'ready').length >= 2, { timeoutMs: 90_000, intervalMs: 200 });
  stop = true;
  await Promise.all(clients);
  await waitUntil('the task back at one executor', async () => (await p.store.listExecutors(taskId)).length === 1, { timeoutMs: 90_000, intervalMs: 200 });
  t.true(statuses.length > 0);
  t.deepEqual([...new Set(statuses)], [200]);
  const status = await p.resources.status(taskId);
  t.true(status!.autoscale!.lastDecision!.to < status!.autoscale!.lastDecision!.from, JSON.stringify(status!.autoscale));
});

test('startCornserve from code autoscales by default like `cornserve up`, and autoscale: false keeps manual scaling', async (t) => {
  const quiet = { port: 0, devices: 1, sidecars: false, logSink: () => {} };
  const [byDefault, manual] = await Promise.all([startCornserve(quiet), startCornserve({ ...quiet, autoscale: false })]);
  t.teardown(() => Promise.all([byDefault.stop(), manual.stop()]));
  t.truthy(byDefault.resources.autoscaling);
  t.is(manual.resources.autoscaling, undefined);
});
