import test from 'ava';
import { TaskGraph, type TaskInvocation } from '../../../../functions/sdk/index.js';
import { EchoTask } from '../../../../functions/tasks/echo.js';
import { Router } from '../../../../control/dispatcher/routing.js';
import { MemoryStore } from '../../../../control/store/memory.js';
import { deployTask, outstandingByExecutor } from '../../../helpers/executors.js';

const fast = new EchoTask({ serviceTimeMs: 0 });
const slow = new EchoTask({ serviceTimeMs: 7 });
const call = (task: EchoTask): TaskInvocation => ({ task, input: { text: 'x' }, output: { echo: '' } });
const graphOf = (...tasks: EchoTask[]) => new TaskGraph(tasks.map(call));
const URL_ = 'http://127.0.0.1:1';

test('routing picks the ready executor with the fewest outstanding requests', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [
    { url: URL_, executorId: 'busy', outstanding: 3 },
    { url: URL_, executorId: 'idle', outstanding: 1 },
    { url: URL_, executorId: 'busier', outstanding: 5 },
  ]);
  const [lease] = await new Router(store).routeGraph(graphOf(fast));
  t.is(lease!.route.executorId, 'idle');
});

test('routing skips draining and starting executors even when they are idle', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [
    { url: URL_, executorId: 'draining', state: 'draining' },
    { url: URL_, executorId: 'starting', state: 'starting' },
    { url: URL_, executorId: 'ready', outstanding: 9 },
  ]);
  const [lease] = await new Router(store).routeGraph(graphOf(fast));
  t.is(lease!.route.executorId, 'ready');
});

test('executors tied on outstanding work take turns', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_, executorId: 'a' }, { url: URL_, executorId: 'b' }]);
  const router = new Router(store);
  const picked: string[] = [];
  for (let n = 0; n < 4; n++) {
    const [lease] = await router.routeGraph(graphOf(fast));
    picked.push(lease!.route.executorId);
    await lease!.release();
  }
  t.deepEqual(picked.sort(), ['a', 'a', 'b', 'b']);
});

test('a lease adds one outstanding request and its release takes it back, once', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_, executorId: 'a', outstanding: 2 }]);
  const [lease] = await new Router(store).routeGraph(graphOf(fast));
  t.deepEqual(await outstandingByExecutor(store), { a: 3 });
  await Promise.all([lease!.release(), lease!.release()]);
  await lease!.release();
  t.deepEqual(await outstandingByExecutor(store), { a: 2 });
});

test('two invocations of one task in a graph are spread over its executors', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_, executorId: 'a' }, { url: URL_, executorId: 'b' }]);
  const leases = await new Router(store).routeGraph(graphOf(fast, fast));
  t.deepEqual(leases.map((l) => l.route.executorId).sort(), ['a', 'b']);
});

test('a task that is not in the Store is a 404 TASK_NOT_DEPLOYED', async (t) => {
  const err = await t.throwsAsync(new Router(new MemoryStore()).routeGraph(graphOf(fast)));
  t.like(err, { code: 'TASK_NOT_DEPLOYED', status: 404 });
});

test('a task still deploying is a 409 TASK_NOT_READY', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_ }], 'deploying');
  const err = await t.throwsAsync(new Router(store).routeGraph(graphOf(fast)));
  t.like(err, { code: 'TASK_NOT_READY', status: 409 });
});

test('a task being torn down is a 409 TASK_NOT_READY', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_ }], 'tearing down');
  const err = await t.throwsAsync(new Router(store).routeGraph(graphOf(fast)));
  t.like(err, { code: 'TASK_NOT_READY', status: 409 });
});

test('a ready task whose executors are all draining is a 503 NO_EXECUTOR', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_, state: 'draining' }]);
  const err = await t.throwsAsync(new Router(store).routeGraph(graphOf(fast)));
  t.like(err, { code: 'NO_EXECUTOR', status: 503 });
});

test('a ready task scaled to zero by hand is a 503 NO_EXECUTOR that names the command bringing one back', async (t) => {
  const store = new MemoryStore();
  const { taskId } = await deployTask(store, fast, []);
  await store.putAutoscale({ taskId, source: 'manual', desired: 0 });
  const err = await t.throwsAsync(new Router(store).routeGraph(graphOf(fast)));
  t.like(err, { code: 'NO_EXECUTOR', status: 503, details: { taskId, scaledToZero: true, retryAfterS: 5 } });
  t.regex(err!.message, new RegExp(`scaled to 0 .*cornserve scale ${taskId} 1`));
});

test('a task with no executor whose autoscaling policy starts one is told to retry, not to scale it', async (t) => {
  const store = new MemoryStore();
  const { taskId } = await deployTask(store, fast, []);
  await store.putAutoscale({ taskId, source: 'default', policy: { min: 1, max: 2, target: 2 }, desired: 1 });
  const err = await t.throwsAsync(new Router(store).routeGraph(graphOf(fast)));
  t.like(err, { code: 'NO_EXECUTOR', details: { taskId, retryAfterS: 5 } });
  t.regex(err!.message, /retry in 5 s/);
  t.false('scaledToZero' in (err as unknown as { details: object }).details);
});

test('when one task of a graph cannot be routed, the leases taken for the others are released', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_, executorId: 'a' }]);
  await deployTask(store, slow, [{ url: URL_, executorId: 'b', state: 'draining' }]);
  await t.throwsAsync(new Router(store).routeGraph(graphOf(fast, slow)), { message: /no ready executor/ });
  t.deepEqual(await outstandingByExecutor(store), { a: 0, b: 0 });
});

test('an executor deleted between listing and leasing is skipped for the next one', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_, executorId: 'gone' }, { url: URL_, executorId: 'there', outstanding: 1 }]);
  const listExecutors = store.listExecutors.bind(store);
  store.listExecutors = async (taskId) => {
    const routes = await listExecutors(taskId);
    await store.deleteExecutor('gone');
    return routes;
  };
  const [lease] = await new Router(store).routeGraph(graphOf(fast));
  t.is(lease!.route.executorId, 'there');
});

test('an executor added after a graph was routed gets the next graph (the route cache follows Store changes)', async (t) => {
  const store = new MemoryStore();
  const { taskId } = await deployTask(store, fast, [{ url: URL_, executorId: 'old', outstanding: 4 }]);
  const router = new Router(store);
  t.is((await router.routeGraph(graphOf(fast)))[0]!.route.executorId, 'old');
  await store.putExecutor({ executorId: 'new', taskId, url: URL_, sidecarRanks: [1], devices: [], state: 'ready', outstanding: 0, startedAt: Date.now() });
  t.is((await router.routeGraph(graphOf(fast)))[0]!.route.executorId, 'new');
});

test('an executor set to draining after a graph was routed gets no more graphs', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_, executorId: 'a' }, { url: URL_, executorId: 'b', outstanding: 9 }]);
  const router = new Router(store);
  await (await router.routeGraph(graphOf(fast)))[0]!.release();
  await store.setExecutorState('a', 'draining');
  const picked = new Set<string>();
  for (let n = 0; n < 3; n++) picked.add((await router.routeGraph(graphOf(fast)))[0]!.route.executorId);
  t.deepEqual([...picked], ['b']);
});

test('a task torn down after a graph was routed is refused with TASK_NOT_READY', async (t) => {
  const store = new MemoryStore();
  const { taskId } = await deployTask(store, fast, [{ url: URL_, executorId: 'a' }]);
  const router = new Router(store);
  await router.routeGraph(graphOf(fast));
  await store.updateTask(taskId, { state: 'tearing down' });
  await t.throwsAsync(router.routeGraph(graphOf(fast)), { code: 'TASK_NOT_READY' });
});

test('leases still outstanding steer the next graph to the least busy executor of the cached routes', async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_, executorId: 'a' }, { url: URL_, executorId: 'b', outstanding: 1 }]);
  const router = new Router(store);
  const picked: string[] = [];
  for (let n = 0; n < 3; n++) picked.push((await router.routeGraph(graphOf(fast)))[0]!.route.executorId);
  t.deepEqual(picked.slice(0, 1), ['a']);
  t.deepEqual(await outstandingByExecutor(store), { a: 2, b: 2 });
});

test('a change notified while the router is reading the Store is not hidden by the routes it read before it', async (t) => {
  // The executor goes draining after the router's listing and its notification arrives before the read finishes.
  class ChangingStore extends MemoryStore {
    drainOnList: string | undefined;
    override async listExecutors(taskId?: string) {
      const routes = await super.listExecutors(taskId);
      const id = this.drainOnList;
      this.drainOnList = undefined;
      if (id) {
        await this.setExecutorState(id, 'draining');
        await new Promise((resolve) => setImmediate(resolve)); // the change notification is delivered
      }
      return routes;
    }
  }
  const store = new ChangingStore();
  await deployTask(store, fast, [{ url: URL_, executorId: 'a' }, { url: URL_, executorId: 'b', outstanding: 9 }]);
  const router = new Router(store);
  store.drainOnList = 'a';
  await (await router.routeGraph(graphOf(fast)))[0]!.release();
  t.is((await router.routeGraph(graphOf(fast)))[0]!.route.executorId, 'b');
});

test('whether a task may scale from zero is read once, and read again after its autoscaling policy changes', async (t) => {
  const store = new MemoryStore();
  const { taskId } = await deployTask(store, fast, [{ url: URL_, executorId: 'draining', state: 'draining' }]);
  await store.putAutoscale({ taskId, source: 'admin', policy: { min: 1, max: 2, target: 2 }, desired: 1 });
  let reads = 0;
  const getAutoscale = store.getAutoscale.bind(store);
  store.getAutoscale = (id) => (reads++, getAutoscale(id));
  const router = new Router(store);
  for (let n = 0; n < 3; n++) t.like(await t.throwsAsync(router.routeGraph(graphOf(fast))), { code: 'NO_EXECUTOR' });
  t.is(reads, 1);
  // min 0 now: the router holds the invocation (here until its already aborted deadline) instead of a 503.
  await store.patchAutoscale(taskId, { policy: { min: 0, max: 2, target: 2 } });
  const deadline = AbortSignal.abort(new Error('deadline passed'));
  await t.throwsAsync(router.routeGraph(graphOf(fast), { signal: deadline }), { message: 'deadline passed' });
  t.is(reads, 2);
});

test('an executor whose leases end after the route cache was re-read gets the next graph (its count is not left stale)', async (t) => {
  const store = new MemoryStore();
  const { taskId } = await deployTask(store, fast, [{ url: URL_, executorId: 'old' }]);
  const router = new Router(store);
  const backlog = [];
  for (let n = 0; n < 5; n++) backlog.push(...(await router.routeGraph(graphOf(fast))));
  // A scale-up: the new route drops the cache, and the next graph re-reads it with 'old' at 5 outstanding.
  await store.putExecutor({ executorId: 'new', taskId, url: URL_, sidecarRanks: [1], devices: [], state: 'ready', outstanding: 0, startedAt: Date.now() });
  t.is((await router.routeGraph(graphOf(fast)))[0]!.route.executorId, 'new');
  for (const lease of backlog) await lease.release(); // 'old' worked off its backlog: 0 outstanding, 'new' has 1
  t.is((await router.routeGraph(graphOf(fast)))[0]!.route.executorId, 'old');
});

/** Counts the Store's route reads (listExecutors), as another process's leases do not show up in a notification. */
function countRouteReads(store: MemoryStore): () => number {
  let n = 0;
  const list = store.listExecutors.bind(store);
  store.listExecutors = (taskId?: string) => (n++, list(taskId));
  return () => n;
}

test("cacheRoutes 'one-ready': a task with one ready executor is read from the Store once, not per graph", async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_, executorId: 'only' }]);
  const reads = countRouteReads(store);
  const router = new Router(store, { cacheRoutes: 'one-ready' });
  for (let n = 0; n < 3; n++) for (const lease of await router.routeGraph(graphOf(fast))) await lease.release();
  t.is(reads(), 1);
});

test("cacheRoutes 'one-ready': with two ready executors the counts are read per graph, so leases taken elsewhere steer the pick", async (t) => {
  const store = new MemoryStore();
  await deployTask(store, fast, [{ url: URL_, executorId: 'a' }, { url: URL_, executorId: 'b' }]);
  const router = new Router(store, { cacheRoutes: 'one-ready' });
  await store.adjustOutstanding('a', 5); // another process's leases: no change notification
  const [first] = await router.routeGraph(graphOf(fast));
  await first!.release();
  await store.adjustOutstanding('a', -5);
  await store.adjustOutstanding('b', 5);
  const [second] = await router.routeGraph(graphOf(fast));
  t.deepEqual([first!.route.executorId, second!.route.executorId], ['b', 'a']);
});
