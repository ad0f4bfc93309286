/**
 * The store link (control/store/link-*.ts): a MemoryStore served on a real unix socket, StoreLink clients connected
 * to it — what plain `cornserve up` gives its app functions for in-process dispatch.
 */
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../../../../control/store/memory.js';
import { StoreNotFoundError, StoreUnavailableError, type StoreChange } from '../../../../control/store/index.js';
import { serveStoreLink, type StoreLinkServer } from '../../../../control/store/link-server.js';
import { StoreLink } from '../../../../control/store/link-client.js';
import { Router } from '../../../../control/dispatcher/routing.js';
import { TaskGraph } from '../../../../functions/sdk/index.js';
import { EchoTask } from '../../../../functions/tasks/echo.js';
import { waitUntil } from '../../../../lib/wait.js';
import { deployTask } from '../../../helpers/executors.js';
import { sampleChunk, sampleRoute, sampleTask } from '../../../helpers/store-records.js';

interface Served {
  store: MemoryStore;
  server: StoreLinkServer;
  link(): StoreLink;
  stop(): Promise<void>;
}

async function served(): Promise<Served> {
  const dir = await mkdtemp(join(tmpdir(), 'cs-link-'));
  const store = new MemoryStore();
  const server = await serveStoreLink(store, join(dir, 'store.sock'));
  const links: StoreLink[] = [];
  return {
    store,
    server,
    link: () => {
      const l = new StoreLink(server.socketPath);
      links.push(l);
      return l;
    },
    stop: async () => {
      await Promise.all(links.map((l) => l.close()));
      await server.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

test('leases taken through two links are counted once, in the served store', async (t) => {
  const s = await served();
  t.teardown(() => s.stop());
  await s.store.putExecutor(sampleRoute(1, 'task-a', { state: 'ready', outstanding: 0 }));
  const [a, b] = [s.link(), s.link()];
  const id = sampleRoute(1, 'task-a').executorId;
  const counts = await Promise.all([a.adjustOutstanding(id, 1), b.adjustOutstanding(id, 1), a.adjustOutstanding(id, 1)]);
  t.deepEqual([...counts].sort(), [1, 2, 3]);
  t.is((await s.store.getExecutor(id))!.outstanding, 3);
  t.is(await b.adjustOutstanding(id, -1), 2);
});

test('reads through the link return the served records; a missing one is undefined', async (t) => {
  const s = await served();
  t.teardown(() => s.stop());
  const task = sampleTask('a', { taskId: 'task-a', state: 'ready' });
  await s.store.acquireTask(task);
  await s.store.putExecutor(sampleRoute(1, 'task-a', { state: 'ready' }));
  const link = s.link();
  t.like(await link.getTask('task-a'), { taskId: 'task-a', state: 'ready' });
  t.is(await link.getTask('task-none'), undefined);
  t.deepEqual(await link.listExecutors('task-a'), await s.store.listExecutors('task-a'));
});

test('a lease on an executor that is gone fails with StoreNotFoundError, as on a local store', async (t) => {
  const s = await served();
  t.teardown(() => s.stop());
  const e = await t.throwsAsync(s.link().adjustOutstanding('exec-gone', 1));
  t.true(e instanceof StoreNotFoundError);
  t.is((e as StoreNotFoundError).id, 'exec-gone');
});

test('route changes made after subscriptionReady() reach the link subscribers', async (t) => {
  const s = await served();
  t.teardown(() => s.stop());
  const link = s.link();
  const seen: StoreChange[] = [];
  link.subscribe((c) => seen.push(c));
  await link.subscriptionReady();
  await s.store.putExecutor(sampleRoute(2, 'task-b', { state: 'ready' }));
  await waitUntil('the route change', () => seen.some((c) => c.kind === 'route' && c.taskId === 'task-b'), { timeoutMs: 10_000 });
  t.pass();
});

test('calls in flight fail with StoreUnavailableError when the served end goes away', async (t) => {
  const s = await served();
  t.teardown(() => s.stop());
  const link = s.link();
  await link.ready();
  await s.server.close();
  const e = await t.throwsAsync(link.getTask('task-a'));
  t.true(e instanceof StoreUnavailableError);
});

test('the dispatcher Router leases through a link: the lease shows in the served store and its release clears it', async (t) => {
  const s = await served();
  t.teardown(() => s.stop());
  const echo = new EchoTask({ serviceTimeMs: 0 });
  await deployTask(s.store, echo, [{ url: 'http://127.0.0.1:1', executorId: 'only' }]);
  const [lease] = await new Router(s.link()).routeGraph(new TaskGraph([{ task: echo, input: { text: 'x' }, output: { echo: '' } }]));
  t.is(lease!.route.executorId, 'only');
  t.is((await s.store.getExecutor('only'))!.outstanding, 1);
  await lease!.release();
  t.is((await s.store.getExecutor('only'))!.outstanding, 0);
});

test('the link forwards only the changes dispatch watches: a tensor chunk put does not cross it', async (t) => {
  const s = await served();
  t.teardown(() => s.stop());
  const link = s.link();
  const seen: StoreChange[] = [];
  link.subscribe((c) => seen.push(c));
  await link.subscriptionReady();
  await s.store.putChunk(sampleChunk('ab12', 0));
  await s.store.putExecutor(sampleRoute(3, 'task-c', { state: 'ready' })); // sent after the chunk's, on the same connection
  await waitUntil('the route change', () => seen.some((c) => c.kind === 'route'), { timeoutMs: 10_000 });
  t.deepEqual(seen.map((c) => c.kind), ['route']);
});

/** Records the adjustOutstanding calls that reach the served store (one per line the link sends). */
function spyAdjust(store: MemoryStore): Array<[string, number]> {
  const calls: Array<[string, number]> = [];
  const adjust = store.adjustOutstanding.bind(store);
  store.adjustOutstanding = (id, delta) => {
    calls.push([id, delta]);
    return adjust(id, delta);
  };
  return calls;
}

test('reported lease changes are summed per executor into one line; the reply tells the count plus what was reported since', async (t) => {
  const s = await served();
  t.teardown(() => s.stop());
  await s.store.putExecutor(sampleRoute(1, 'task-a', { state: 'ready', outstanding: 0 }));
  const id = sampleRoute(1, 'task-a').executorId;
  const link = new StoreLink(s.server.socketPath, { reportWindowMs: 5 });
  t.teardown(() => link.close());
  const calls = spyAdjust(s.store);
  const counts: number[] = [];
  for (let k = 0; k < 3; k++) link.reportOutstanding(id, +1, (n) => counts.push(n));
  await waitUntil('the reported leases in the served store', async () => (await s.store.getExecutor(id))!.outstanding === 3, { timeoutMs: 10_000 });
  t.deepEqual(calls, [[id, 3]]);
  await waitUntil('the reply', () => counts.length > 0, { timeoutMs: 10_000 });
  t.deepEqual(counts, [3]);
});

test('close() sends the lease changes still gathered; a lease taken and released within the window sends nothing', async (t) => {
  const s = await served();
  t.teardown(() => s.stop());
  await s.store.putExecutor(sampleRoute(1, 'task-a', { state: 'ready', outstanding: 0 }));
  await s.store.putExecutor(sampleRoute(2, 'task-a', { state: 'ready', outstanding: 4 }));
  const [busy, quick] = [sampleRoute(2, 'task-a').executorId, sampleRoute(1, 'task-a').executorId];
  const link = new StoreLink(s.server.socketPath, { reportWindowMs: 600_000 });
  await link.ready();
  const calls = spyAdjust(s.store);
  link.reportOutstanding(quick, +1);
  link.reportOutstanding(busy, +1);
  link.reportOutstanding(quick, -1);
  await link.close();
  await waitUntil('the flushed lease', async () => (await s.store.getExecutor(busy))!.outstanding === 5, { timeoutMs: 10_000 });
  t.deepEqual(calls, [[busy, 1]]);
  t.is((await s.store.getExecutor(quick))!.outstanding, 0);
});

test("with leases: 'reported', a graph over a task's cached route is leased without a store round trip; the Store counts it shortly after", async (t) => {
  const s = await served();
  t.teardown(() => s.stop());
  const echo = new EchoTask({ serviceTimeMs: 0 });
  await deployTask(s.store, echo, [{ url: 'http://127.0.0.1:1', executorId: 'only' }]);
  const link = new StoreLink(s.server.socketPath, { reportWindowMs: 5 });
  t.teardown(() => link.close());
  const router = new Router(link, { cacheRoutes: 'one-ready', leases: 'reported' });
  const graph = () => new TaskGraph([{ task: echo, input: { text: 'x' }, output: { echo: '' } }]);
  const outstanding = async () => (await s.store.getExecutor('only'))!.outstanding;
  const [first] = await router.routeGraph(graph()); // read from the Store: cached from now on
  await first!.release();
  await waitUntil('the first lease released', async () => (await outstanding()) === 0, { timeoutMs: 10_000 });
  const calls = spyAdjust(s.store);
  const [lease] = await router.routeGraph(graph());
  t.deepEqual(calls, []); // nothing was asked of the store before the lease was handed out
  t.is(lease!.route.executorId, 'only');
  t.is(lease!.route.outstanding, 1);
  await waitUntil('the lease counted in the served store', async () => (await outstanding()) === 1, { timeoutMs: 10_000 });
  await lease!.release();
  await waitUntil('the release counted', async () => (await outstanding()) === 0, { timeoutMs: 10_000 });
  t.deepEqual(calls, [['only', 1], ['only', -1]]);
});

test("leases: 'reported' is refused on a store that cannot take reported lease changes", (t) => {
  t.throws(() => new Router(new MemoryStore(), { leases: 'reported' }), { instanceOf: TypeError, message: /store link/ });
});
