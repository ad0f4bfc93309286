import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { echo } from '../../helpers/local-platform.js';
import { startEchoExecutor } from '../../helpers/executors.js';
import { ExecutorLoadReader } from '../../../control/autoscaler/executor-load.js';
import type { ExecutorRoute } from '../../../lib/store.js';

test('an echo executor serves maxConcurrency requests at once and queues the rest', async (t) => {
  const ex = await startEchoExecutor({ serviceTimeMs: 4000, maxConcurrency: 2 });
  t.teardown(() => ex.stop());
  const replies = Promise.all([0, 1, 2].map((i) => echo(ex.url, `r${i}`, 4000)));
  const seen = await waitUntil('3 requests in the executor', async () => {
    const info = await ex.info();
    return info.inFlight === 3 ? info : undefined;
  }, { timeoutMs: 30_000, intervalMs: 20 });
  t.like(seen, { maxConcurrency: 2, queued: 1 });
  const done = await replies;
  t.deepEqual(done.map((r) => r.status), [200, 200, 200]);
  t.deepEqual(done.map((r) => r.body), [0, 1, 2].map((i) => ({ echo: `r${i}` })));
  t.like(await ex.info(), { queued: 0, inFlight: 0, served: 3 });
});

test('the resource manager reads an echo executor\'s queue past maxConcurrency, the requests it holds and its busy fraction from GET /load', async (t) => {
  const ex = await startEchoExecutor({ serviceTimeMs: 3000, maxConcurrency: 1 });
  t.teardown(() => ex.stop());
  const reader = new ExecutorLoadReader({ timeoutMs: 10_000 });
  const route: ExecutorRoute = { executorId: ex.executorId, taskId: 'echo-task', url: ex.url, state: 'ready', outstanding: 0, sidecarRanks: [], devices: [], startedAt: 0 };
  t.deepEqual((await reader.read([route])).get('echo-task'), { queueDepth: 0, inFlight: 0, serving: 1, busyFraction: undefined, concurrencyLimit: 1 }, 'idle, first reading');
  const replies = Promise.all([0, 1, 2].map((i) => echo(ex.url, `r${i}`, 3000)));
  const busy = await waitUntil('two requests queued behind the one served', async () => {
    const load = (await reader.read([route])).get('echo-task');
    return load && load.queueDepth === 2 && load.inFlight === 3 && load.busyFraction !== undefined && load.busyFraction > 0 ? load : undefined;
  }, { timeoutMs: 30_000, intervalMs: 100 });
  t.true(busy.busyFraction! <= 1);
  t.is(busy.concurrencyLimit, 1);
  await replies;
});

test('an echo executor without maxConcurrency reports no concurrency limit on GET /load', async (t) => {
  const ex = await startEchoExecutor({ serviceTimeMs: 0 });
  t.teardown(() => ex.stop());
  const route: ExecutorRoute = { executorId: ex.executorId, taskId: 'echo-task', url: ex.url, state: 'ready', outstanding: 0, sidecarRanks: [], devices: [], startedAt: 0 };
  const raw = (await (await fetch(new URL('/load', ex.url))).json()) as Record<string, unknown>;
  t.is(raw.max_concurrency, null);
  const load = (await new ExecutorLoadReader({ timeoutMs: 10_000 }).read([route])).get('echo-task');
  t.deepEqual(load, { queueDepth: 0, inFlight: 0, serving: 1, busyFraction: undefined }, 'no limit: the reader carries none');
});
