/**
 * The autoscaling loop against real Stores (MemoryStore; a real redis-server it stops and restarts) with a
 * stand-in for the resource manager's scale (the loop's one way out), so faults can be injected exactly.
 */
import test, { type ExecutionContext } from 'ava';
import { RedisStore } from '../../../../control/store/redis.js';
import { MemoryStore } from '../../../../control/store/memory.js';
import type { Store } from '../../../../lib/store.js';
import { AutoscaleLoop, type AutoscaleTarget } from '../../../../control/resources/autoscale-loop.js';
import { counterNames, COUNTER_TTL_MS, LoadReader } from '../../../../control/autoscaler/signals.js';
import { PROFILING_WEIGHT } from '../../../../control/taskmanager/profiler-run.js';
import { waitUntil } from '../../../../lib/wait.js';
import { uniquePrefix } from '../../../helpers/ids.js';
import { startRedis, type RedisServer } from '../../../helpers/redis.js';
import { sampleRoute, sampleTask } from '../../../helpers/store-records.js';

/** Tasks with executor counts; scaleExecutors changes the count, or fails for the ids in `failing`. */
function fakeTarget(counts: Record<string, number>, failing = new Set<string>()) {
  const calls: Array<{ taskId: string; delta: number }> = [];
  const target: AutoscaleTarget = {
    runningTasks: () => Object.entries(counts).map(([taskId, executors]) => ({ taskId, executors, devicesPerExecutor: 1 })),
    poolDevices: () => 8,
    async scaleExecutors(taskId, delta) {
      calls.push({ taskId, delta });
      if (failing.has(taskId)) throw new Error('EXECUTOR_START_FAILED: the executor exited while starting');
      counts[taskId]! += delta;
    },
  };
  return { target, calls };
}

const sampleIds = <N extends number[]>(...ids: N) => ids.map((n) => sampleTask(n).taskId) as { [K in keyof N]: string };

async function readyTasks(store: Store, ...ids: number[]) {
  for (const n of ids) {
    await store.acquireTask(sampleTask(n, { state: 'ready' }));
  }
  return ids.map((n) => sampleTask(n).taskId);
}

/** Invocations held at zero executors: the signal that asks for a first executor. */
const hold = (store: Store, taskId: string) => store.addCounters([{ name: counterNames.held(taskId), delta: 1 }], COUNTER_TTL_MS);

test('an executor that fails to start is backed off and reported, and never blocks another task', async (t) => {
  const store = new MemoryStore();
  const [a, b] = await readyTasks(store, 1, 2);
  const { target, calls } = fakeTarget({ [a!]: 0, [b!]: 0 }, new Set([a!]));
  const loop = new AutoscaleLoop(store, target, { backoff: { baseMs: 60_000 } });
  t.teardown(() => loop.stop());
  for (const id of [a!, b!]) await loop.setPolicy(id, { min: 0, max: 2, target: 2 }, 'admin', 0);
  await hold(store, a!);
  await hold(store, b!);
  await loop.tick();
  await loop.stop(); // waits for the scale operations
  t.deepEqual(calls.map((c) => c.taskId).sort(), [a!, b!].sort());
  const failed = await store.getAutoscale(a!);
  t.regex(failed!.lastDecision!.reason, /FAILED to scale to 1: EXECUTOR_START_FAILED.*next attempt in \d+ s/);
  t.is((await store.getAutoscale(b!))!.desired, 1);
});

test('a failed start is not retried before its backoff ends', async (t) => {
  const store = new MemoryStore();
  const [a] = await readyTasks(store, 1);
  const { target, calls } = fakeTarget({ [a!]: 0 }, new Set([a!]));
  const loop = new AutoscaleLoop(store, target, { backoff: { baseMs: 60_000 } });
  await loop.setPolicy(a!, { min: 0, max: 2, target: 2 }, 'admin', 0);
  await hold(store, a!);
  await loop.tick();
  await new Promise((r) => setTimeout(r, 50));
  await loop.tick();
  await loop.stop();
  t.is(calls.length, 1);
});

test('after a tick the loop tells the policy in force for each task (its own, else the default; none when manual)', async (t) => {
  const store = new MemoryStore();
  const [a, b, m] = await readyTasks(store, 1, 2, 3);
  const { target } = fakeTarget({ [a!]: 1, [b!]: 1, [m!]: 1 });
  const loop = new AutoscaleLoop(store, target);
  t.teardown(() => loop.stop());
  await loop.setPolicy(m!, undefined, 'manual', 1);
  await loop.setPolicy(a!, { min: 1, max: 4, target: 5 }, 'admin', 1); // starts a tick of its own
  await loop.tick();
  await loop.tick(); // one that surely began after both policies were set
  t.like(loop.policyOf(a!), { min: 1, max: 4, target: 5 });
  t.like(loop.policyOf(b!), { min: 1, target: 2 }, 'the default policy');
  t.is(loop.policyOf(m!), undefined, 'a manual task has no policy');
});

let redis: RedisServer | undefined;
test.before(async () => {
  redis = await startRedis();
});
test.after.always(() => redis?.stop());

test.serial('a Store outage pauses decisions: nothing is scaled, and decisions resume when it answers', async (t) => {
  const prefix = uniquePrefix('autoscale');
  const store = new RedisStore({ url: redis!.url, prefix, commandTimeoutMs: 1000 });
  t.teardown(() => store.close());
  const [a] = await readyTasks(store, 1);
  const counts = { [a!]: 1 };
  const { target, calls } = fakeTarget(counts);
  const loop = new AutoscaleLoop(store, target, {});
  t.teardown(() => loop.stop());
  await loop.setPolicy(a!, { min: 1, max: 2, target: 2 }, 'admin', 1);
  await loop.tick();
  t.deepEqual(calls, []); // at min, idle: nothing to do
  counts[a!] = 0; // an executor lost: below min, a decision would scale up
  await redis!.stop();
  t.teardown(() => redis!.restart());
  await loop.tick();
  t.regex(loop.paused ?? '', /Store cannot be read/);
  t.deepEqual(calls, []);
  await redis!.restart();
  // redis-server here keeps no data across a restart: put the task back, as a persistent Redis would have it.
  await readyTasks(store, 1);
  await loop.setPolicy(a!, { min: 1, max: 2, target: 2 }, 'admin', 0);
  await loop.tick();
  await loop.stop();
  t.is(loop.paused, undefined);
  t.deepEqual(calls, [{ taskId: a!, delta: 1 }]);
});

test.serial('a restarted resource manager on the same Redis finds the policies and desired counts', async (t) => {
  const prefix = uniquePrefix('autoscale');
  const first = new RedisStore({ url: redis!.url, prefix });
  const [a] = await readyTasks(first, 1);
  const { target } = fakeTarget({ [a!]: 1 });
  const before = new AutoscaleLoop(first, target, {});
  await before.setPolicy(a!, { min: 0, max: 3, sloMs: 200 }, 'admin', 1);
  await before.stop();
  await first.close();

  const second = new RedisStore({ url: redis!.url, prefix });
  t.teardown(() => second.close());
  const after = new AutoscaleLoop(second, target, {});
  t.teardown(() => after.stop());
  const status = after.status(a!, await second.getAutoscale(a!));
  t.deepEqual(status?.policy, { min: 0, max: 3, sloMs: 200 });
  t.is(status?.source, 'admin');
  t.is(status?.desired, 1);
});

test('a task still starting executors gets more at once when the next tick sees more demand', async (t) => {
  const store = new MemoryStore();
  const [a] = await readyTasks(store, 1);
  const counts = { [a!]: 1 };
  const calls: number[] = [];
  let release!: () => void;
  const started = new Promise<void>((r) => (release = r));
  const target: AutoscaleTarget = {
    runningTasks: () => [{ taskId: a!, executors: counts[a!]!, devicesPerExecutor: 1 }],
    poolDevices: () => 4,
    async scaleExecutors(_taskId, delta) {
      calls.push(delta);
      counts[a!]! += delta; // as the resource manager: starting executors count at once...
      await started; // ...and are ready only later
    },
  };
  // Just past a second's start: the first read covers the two seconds before and almost nothing of the open one.
  let now = Math.floor(Date.now() / 1000) * 1000 + 1;
  const loop = new AutoscaleLoop(store, target, { now: () => now, capacity: (taskId) => ({ taskId, perExecutorRps: 10, source: 'profile' }) });
  t.teardown(async () => {
    release();
    await loop.stop();
  });
  const arrivals = (rps: number) => store.addCounters([1, 2].map((back) => ({ name: counterNames.arrivals(a!, Math.floor(now / 1000) - back), delta: rps })), COUNTER_TTL_MS);
  await arrivals(15); // the first tick sees part of a step: 1.5 executors at 10 req/s each
  await loop.setPolicy(a!, { min: 1, max: 4, target: 2 }, 'admin', 1); // ticks
  await waitUntil('the first scale-up', () => calls.length === 1, { timeoutMs: 5000 });
  now += 2000;
  await arrivals(30); // the whole step: 3 executors, while the second one is still starting
  await loop.tick();
  await waitUntil('a second scale-up while the first still starts', () => calls.length === 2, { timeoutMs: 5000 });
  t.deepEqual(calls, [1, 1]);
  release();
  await loop.stop();
  t.is((await store.getAutoscale(a!))!.desired, 3);
});

test('an executor being profiled counts only the requests routed to it as in flight', async (t) => {
  const store = new MemoryStore();
  const [a] = await readyTasks(store, 1);
  await store.putExecutor(sampleRoute(1, a!, { state: 'ready' }));
  await store.adjustOutstanding('exec-1', PROFILING_WEIGHT + 2);
  const { tasks } = await new LoadReader(store).read(Date.now(), [a!], [], await store.listExecutors());
  t.is(tasks[0]!.inFlight, 2);
});

test('a task being profiled is not scaled by the profile\'s load', async (t) => {
  const store = new MemoryStore();
  const [a] = await readyTasks(store, 1);
  await store.putExecutor(sampleRoute(1, a!, { state: 'ready' }));
  await store.adjustOutstanding('exec-1', PROFILING_WEIGHT);
  const { target, calls } = fakeTarget({ [a!]: 1 });
  const loop = new AutoscaleLoop(store, target);
  t.teardown(() => loop.stop());
  await loop.setPolicy(a!, { min: 1, max: 3, target: 2 }, 'admin', 1);
  await loop.tick();
  await loop.tick();
  await loop.stop();
  t.deepEqual(calls, []);
  t.is((await store.getAutoscale(a!))!.desired, 1);
});

test('a task scaled by hand desires the executors it was scaled to, not an earlier decision\'s count', async (t) => {
  const store = new MemoryStore();
  const [a] = await readyTasks(store, 1);
  const loop = new AutoscaleLoop(store, fakeTarget({ [a!]: 3 }).target);
  t.teardown(() => loop.stop());
  await loop.setPolicy(a!, { min: 1, max: 4, target: 2 }, 'admin', 3);
  await loop.setPolicy(a!, undefined, 'manual', 1);
  const record = (await store.getAutoscale(a!))!;
  t.is(record.source, 'manual');
  t.is(record.desired, 1);
});

test('the load reader reads complete seconds only: one request early in a second is no rate until that second ends', async (t) => {
  const store = new MemoryStore();
  const second = Math.floor(Date.now() / 1000);
  const reader = new LoadReader(store);
  await reader.read(second * 1000 + 100, ['a'], [], []);
  await store.addCounters([{ name: counterNames.arrivals('a', second), delta: 1 }], COUNTER_TTL_MS);
  const open = await reader.read(second * 1000 + 356, ['a'], [], []);
  t.is(open.tasks[0]!.windowMs, 0, 'a read inside the second reads no rate (1 request in 256 ms is not 3.9 req/s)');
  const closed = await reader.read(second * 1000 + 1_100, ['a'], [], []);
  t.is(closed.tasks[0]!.windowMs, 1000);
  t.is(closed.tasks[0]!.arrivalRps, 1);
});

test('the load reader reads each complete second once, across ticks closer together than a second', async (t) => {
  const store = new MemoryStore();
  const second = Math.floor(Date.now() / 1000);
  const reader = new LoadReader(store);
  await store.addCounters([{ name: counterNames.arrivals('a', second), delta: 5 }, { name: counterNames.arrivals('a', second + 1), delta: 7 }], COUNTER_TTL_MS);
  const reads = [];
  for (const at of [100, 600, 1_100, 1_600, 2_100, 2_600]) reads.push(await reader.read(second * 1000 + at, ['a'], [], []));
  const arrivals = reads.reduce((a, r) => a + (r.tasks[0]!.arrivalRps * r.tasks[0]!.windowMs) / 1000, 0);
  t.is(arrivals, 12);
});

/**
 * A pool of `poolDevices` whose free devices are those no executor holds: a draining executor holds its device until the
 * drain ends (`drained()` ends every drain), as the resource manager's inventory does, and a scale-up asking for more
 * than is free is refused as the resource manager refuses it.
 */
async function drainingPool(t: ExecutionContext, counts: Record<string, number>, poolDevices: number) {
  const store = new MemoryStore();
  const calls: string[] = [];
  let drained!: () => void;
  const draining = new Promise<void>((r) => (drained = r));
  const free = () => poolDevices - Object.values(counts).reduce((x, n) => x + n, 0);
  const target: AutoscaleTarget = {
    runningTasks: () => Object.entries(counts).map(([taskId, executors]) => ({ taskId, executors, devicesPerExecutor: 1 })),
    poolDevices: () => poolDevices,
    freeDevices: free,
    async scaleExecutors(taskId, delta) {
      if (delta > free()) throw new Error(`${delta} device(s) requested but only ${free()} free`);
      calls.push(`${taskId} ${delta > 0 ? '+' : ''}${delta}`);
      if (delta < 0) await draining;
      counts[taskId]! += delta;
    },
  };
  const now = Math.floor(Date.now() / 1000) * 1000 + 1;
  const loop = new AutoscaleLoop(store, target, { now: () => now });
  t.teardown(async () => {
    drained();
    await loop.stop();
  });
  const policy = (taskId: string, min: number, max: number) => store.patchAutoscale(taskId, { source: 'admin', policy: { min, max, target: 2 } }, { create: { taskId, source: 'admin', policy: { min, max, target: 2 }, desired: counts[taskId]! } });
  return { store, loop, calls, drained, policy };
}

test('a scale-up that fits in the free devices starts while the donors drain; one that needs their devices waits', async (t) => {
  const [a, b, c] = sampleIds(1, 2, 3);
  const { store, loop, calls, drained, policy } = await drainingPool(t, { [a]: 3, [b]: 1, [c]: 1 }, 6);
  await readyTasks(store, 1, 2, 3);
  // a gives two executors back (its policy's max falls to 1), b asks for one more (its min rises to 2): that fits in the
  // free device; c asks for two more (min 3), which needs a's devices.
  await policy(b, 2, 2);
  await policy(c, 3, 3);
  await policy(a, 1, 1);
  await loop.tick(); // one round decides all three
  await waitUntil('a drains and b starts', () => calls.includes(`${a} -2`) && calls.includes(`${b} +1`), { timeoutMs: 5000 });
  t.false(calls.includes(`${c} +2`), 'c waits for the drain');
  drained();
  await waitUntil('c starts once a has drained', () => calls.includes(`${c} +2`), { timeoutMs: 5000 });
});

test('a scale-up decided while an earlier tick\'s drain is still running waits for that drain instead of failing for want of devices', async (t) => {
  const [a, b, c] = sampleIds(1, 2, 3);
  const { store, loop, calls, drained, policy } = await drainingPool(t, { [a]: 3, [b]: 1, [c]: 1 }, 5);
  await readyTasks(store, 1, 2, 3);
  // First tick: a gives two executors back, b takes one of their devices once they are drained.
  await policy(b, 2, 2);
  await policy(a, 1, 1);
  await loop.tick();
  await waitUntil('a drains', () => calls.includes(`${a} -2`), { timeoutMs: 5000 });
  // Next tick, a still draining: c asks for one more, which only a's other device can give.
  await policy(c, 2, 2);
  await loop.tick();
  t.deepEqual(calls, [`${a} -2`], 'neither b nor c starts before the drain ends');
  drained();
  await waitUntil('b and c start once a has drained', () => calls.includes(`${b} +1`) && calls.includes(`${c} +1`), { timeoutMs: 5000 });
  const records = await Promise.all([b, c].map((id) => store.getAutoscale(id)));
  t.false(records.some((r) => r?.lastDecision?.reason.includes('FAILED')), 'no scale-up failed');
});
