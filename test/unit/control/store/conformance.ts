/**
 * One behavioural suite for every Store backend. A backend's test file calls
 * `storeConformance(name, makeStore)`; each test gets a fresh, empty store.
 *
 * `peer` is a second handle on the same data: another instance (another connection) for Redis,
 * the same instance for memory (separate MemoryStores share nothing). Concurrency and subscription
 * tests drive both handles at once.
 */
import test, { type ExecutionContext } from 'ava';
import { StoreClosedError, StoreConflictError, StoreNotFoundError } from '../../../../lib/store-errors.js';
import type { Store, StoreChange } from '../../../../lib/store.js';
import { waitUntil } from '../../../../lib/wait.js';
import { sampleApp, sampleChunk, sampleRoute, sampleSidecar, sampleTask } from '../../../helpers/store-records.js';

export interface StoreFixture {
  store: Store;
  peer: Store;
  cleanup: () => Promise<void>;
}

type Body = (t: ExecutionContext, s: { store: Store; peer: Store }) => Promise<void>;

/** Collects the changes a store delivers to one listener. */
function watch(store: Store) {
  const seen: StoreChange[] = [];
  const stop = store.subscribe((change) => seen.push(change));
  return { seen, stop };
}

const waitForCount = (seen: unknown[], n: number) =>
  waitUntil(`${n} store changes`, () => seen.length >= n, { timeoutMs: 10_000 });

export function storeConformance(name: string, makeStore: () => Promise<StoreFixture>): void {
  const it = (title: string, body: Body) =>
    test(`${name} › ${title}`, async (t) => {
      const { store, peer, cleanup } = await makeStore();
      t.teardown(cleanup);
      await store.ready();
      await peer.ready();
      await body(t, { store, peer });
    });

  // ---------- apps ----------

  const def = (name: string, digest: string) => ({ name, className: 'WordCountTask', digest, definition: { name, digest }, source: 'export default 1;', registeredAt: 1 });
  it('putTaskDefinition stores a new definition and lists it', async (t, { store }) => {
    t.is(await store.putTaskDefinition(def('word-count', 'a')), 'created');
    t.deepEqual(await store.listTaskDefinitions(), [def('word-count', 'a')]);
  });

  it('putTaskDefinition of an equal definition is "same" and of a different one "conflict", changing nothing', async (t, { store }) => {
    await store.putTaskDefinition(def('word-count', 'a'));
    t.is(await store.putTaskDefinition(def('word-count', 'a')), 'same');
    t.is(await store.putTaskDefinition(def('word-count', 'b')), 'conflict');
    t.deepEqual(await store.listTaskDefinitions(), [def('word-count', 'a')]);
  });

  it('deleteTaskDefinition removes it and returns false for an unknown name', async (t, { store }) => {
    await store.putTaskDefinition(def('word-count', 'a'));
    t.true(await store.deleteTaskDefinition('word-count'));
    t.false(await store.deleteTaskDefinition('word-count'));
    t.deepEqual(await store.listTaskDefinitions(), []);
  });

  it('putApp then getApp returns an equal record', async (t, { store }) => {
    const app = sampleApp(1);
    await store.putApp(app);
    t.deepEqual(await store.getApp(app.appId), app);
  });

  it('getApp returns undefined for an unknown id', async (t, { store }) => {
    t.is(await store.getApp('app-unknown'), undefined);
  });

  it('findApp finds an app by id', async (t, { store }) => {
    const app = sampleApp(1);
    await store.putApp(app);
    t.deepEqual(await store.findApp(app.appId), app);
  });

  it('findApp finds an app by name', async (t, { store }) => {
    const app = sampleApp(1);
    await store.putApp(app);
    await store.putApp(sampleApp(2));
    t.deepEqual(await store.findApp('app1'), app);
  });

  it('findApp finds an app by alias', async (t, { store }) => {
    const app = sampleApp(1, { aliases: ['gpt-tiny', 'vision'] });
    await store.putApp(app);
    t.deepEqual(await store.findApp('vision'), app);
  });

  it('findApp returns undefined for an unknown name', async (t, { store }) => {
    await store.putApp(sampleApp(1));
    t.is(await store.findApp('nobody'), undefined);
  });

  it('putApp of an existing app replaces it and its names', async (t, { store }) => {
    await store.putApp(sampleApp(1, { aliases: ['old'] }));
    const updated = sampleApp(1, { aliases: ['new'], state: 'ready' });
    await store.putApp(updated);
    t.deepEqual(await store.findApp('new'), updated);
    t.is(await store.findApp('old'), undefined);
  });

  it("putApp rejects a name or alias used by another app with STORE_CONFLICT and stores nothing", async (t, { store }) => {
    await store.putApp(sampleApp(1, { aliases: ['shared'] }));
    const err = await t.throwsAsync(store.putApp(sampleApp(2, { aliases: ['shared'] })), {
      instanceOf: StoreConflictError,
    });
    t.is(err?.code, 'STORE_CONFLICT');
    t.is(await store.getApp(sampleApp(2).appId), undefined);
    t.is((await store.findApp('shared'))?.appId, sampleApp(1).appId);
  });

  it('listApps returns every app', async (t, { store }) => {
    await store.putApp(sampleApp(2));
    await store.putApp(sampleApp(1));
    t.deepEqual(await store.listApps(), [sampleApp(1), sampleApp(2)]);
  });

  it('setAppState changes only the state', async (t, { store }) => {
    await store.putApp(sampleApp(1));
    await store.setAppState(sampleApp(1).appId, 'ready');
    t.deepEqual(await store.getApp(sampleApp(1).appId), sampleApp(1, { state: 'ready' }));
  });

  it('setAppState rejects an unknown app with STORE_NOT_FOUND', async (t, { store }) => {
    await t.throwsAsync(store.setAppState('app-unknown', 'ready'), { instanceOf: StoreNotFoundError, code: 'STORE_NOT_FOUND' });
  });

  it('deleteApp removes the app and its names and returns true', async (t, { store }) => {
    const app = sampleApp(1);
    await store.putApp(app);
    t.true(await store.deleteApp(app.appId));
    t.is(await store.getApp(app.appId), undefined);
    t.is(await store.findApp(app.name), undefined);
    t.deepEqual(await store.listApps(), []);
  });

  it('deleteApp frees the names for another app', async (t, { store }) => {
    await store.putApp(sampleApp(1, { aliases: ['shared'] }));
    await store.deleteApp(sampleApp(1).appId);
    await store.putApp(sampleApp(2, { aliases: ['shared'] }));
    t.is((await store.findApp('shared'))?.appId, sampleApp(2).appId);
  });

  it('deleteApp returns false for an unknown id', async (t, { store }) => {
    t.false(await store.deleteApp('app-unknown'));
  });

  it('app records returned are copies', async (t, { store }) => {
    await store.putApp(sampleApp(1));
    const got = (await store.getApp(sampleApp(1).appId))!;
    got.aliases.push('mutated');
    got.state = 'ready';
    t.deepEqual(await store.getApp(sampleApp(1).appId), sampleApp(1));
  });

  it('putApp keeps a copy, not the caller object', async (t, { store }) => {
    const app = sampleApp(1);
    await store.putApp(app);
    app.taskIds.push('mutated');
    t.deepEqual(await store.getApp(app.appId), sampleApp(1));
  });

  // ---------- unit tasks ----------

  it('acquireTask creates an unknown task with usage 1', async (t, { store }) => {
    const result = await store.acquireTask(sampleTask(1));
    t.deepEqual(result, { record: { ...sampleTask(1), usage: 1 }, created: true });
    t.deepEqual(await store.getTask(sampleTask(1).taskId), { ...sampleTask(1), usage: 1 });
  });

  it('acquireTask of an existing task increments usage and returns the stored record', async (t, { store }) => {
    await store.acquireTask(sampleTask(1));
    const again = await store.acquireTask(sampleTask(1, { state: 'ready', task: { other: true } }));
    t.deepEqual(again, { record: { ...sampleTask(1), usage: 2 }, created: false });
  });

  it('releaseTask decrements usage and returns the new count', async (t, { store }) => {
    await store.acquireTask(sampleTask(1));
    await store.acquireTask(sampleTask(1));
    t.is(await store.releaseTask(sampleTask(1).taskId), 1);
    t.is((await store.getTask(sampleTask(1).taskId))?.usage, 1);
  });

  it('releaseTask never goes below 0', async (t, { store }) => {
    await store.acquireTask(sampleTask(1));
    t.is(await store.releaseTask(sampleTask(1).taskId), 0);
    t.is(await store.releaseTask(sampleTask(1).taskId), 0);
  });

  it('releaseTask returns undefined for an unknown task', async (t, { store }) => {
    t.is(await store.releaseTask('encodertask-unknown'), undefined);
  });

  it('getTask returns undefined for an unknown task', async (t, { store }) => {
    t.is(await store.getTask('encodertask-unknown'), undefined);
  });

  it('listTasks returns every task', async (t, { store }) => {
    await store.acquireTask(sampleTask(2));
    await store.acquireTask(sampleTask(1));
    t.deepEqual(await store.listTasks(), [
      { ...sampleTask(1), usage: 1 },
      { ...sampleTask(2), usage: 1 },
    ]);
  });

  it('updateTask patches state and devices, keeps usage and the rest, and bumps updatedAt', async (t, { store }) => {
    await store.acquireTask(sampleTask(1));
    await store.acquireTask(sampleTask(1));
    const devices = [{ node: 'node-b', globalRank: 3, localRank: 1 }];
    await store.updateTask(sampleTask(1).taskId, { state: 'ready', devices });
    const got = (await store.getTask(sampleTask(1).taskId))!;
    t.deepEqual({ ...got, updatedAt: 0 }, { ...sampleTask(1), state: 'ready', devices, usage: 2, updatedAt: 0 });
    t.true(got.updatedAt > sampleTask(1).updatedAt);
  });

  it('updateTask with only a state leaves the devices', async (t, { store }) => {
    const devices = [{ node: 'node-a', globalRank: 0, localRank: 0 }];
    await store.acquireTask(sampleTask(1, { devices }));
    await store.updateTask(sampleTask(1).taskId, { state: 'tearing down' });
    const got = (await store.getTask(sampleTask(1).taskId))!;
    t.deepEqual([got.state, got.devices], ['tearing down', devices]);
  });

  it('updateTask rejects an unknown task with STORE_NOT_FOUND', async (t, { store }) => {
    await t.throwsAsync(store.updateTask('encodertask-unknown', { state: 'ready' }), { code: 'STORE_NOT_FOUND' });
  });

  it('deleteTask removes the task and returns true', async (t, { store }) => {
    await store.acquireTask(sampleTask(1));
    t.true(await store.deleteTask(sampleTask(1).taskId));
    t.is(await store.getTask(sampleTask(1).taskId), undefined);
    t.deepEqual(await store.listTasks(), []);
  });

  it('deleteTask returns false for an unknown task', async (t, { store }) => {
    t.false(await store.deleteTask('encodertask-unknown'));
  });

  it('task records returned are copies', async (t, { store }) => {
    const { record } = await store.acquireTask(sampleTask(1));
    record.usage = 99;
    record.devices.push({ node: 'x', globalRank: 9, localRank: 9 });
    t.deepEqual(await store.getTask(sampleTask(1).taskId), { ...sampleTask(1), usage: 1 });
  });

  it('50 concurrent acquireTask calls through two handles lose no update', async (t, { store, peer }) => {
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? store : peer).acquireTask(sampleTask(1))),
    );
    t.is(results.filter((r) => r.created).length, 1);
    t.deepEqual(results.map((r) => r.record.usage).sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i + 1));
    t.is((await store.getTask(sampleTask(1).taskId))?.usage, 50);
  });

  it('50 concurrent releaseTask calls through two handles lose no update', async (t, { store, peer }) => {
    for (let i = 0; i < 60; i++) await store.acquireTask(sampleTask(1));
    const counts = await Promise.all(
      Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? store : peer).releaseTask(sampleTask(1).taskId)),
    );
    t.deepEqual((counts as number[]).sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i + 10));
    t.is((await peer.getTask(sampleTask(1).taskId))?.usage, 10);
  });

  // ---------- device inventory ----------

  it('getInventory is empty before any putInventory', async (t, { store }) => {
    t.deepEqual(await store.getInventory(), []);
  });

  it('putInventory replaces the inventory', async (t, { store }) => {
    await store.putInventory([{ node: 'old', devices: [] }]);
    const nodes = [
      {
        node: 'node-a',
        sidecarUrl: 'http://127.0.0.1:10000',
        devices: [
          { node: 'node-a', globalRank: 0, localRank: 0, owner: 'encodertask-1' },
          { node: 'node-a', globalRank: 1, localRank: 1, owner: null },
        ],
      },
    ];
    await store.putInventory(nodes);
    t.deepEqual(await store.getInventory(), nodes);
  });

  // ---------- profiles and live service ----------

  const profile = (taskKey: string, deviceKind: string, throughputRps = 100) => {
    const point = { devicesPerExecutor: 1, concurrency: 2, throughputRps, p50Ms: 20, p99Ms: 24.5 };
    return { taskKey, deviceKind, points: [point, { ...point, concurrency: 4, p50Ms: 40, p99Ms: 45 }], frontier: [point], measuredAt: 1_700_000_000_000 };
  };

  it('putProfile then getProfile (another handle) returns an equal profile under its task key and device kind', async (t, { store, peer }) => {
    const key = 'EchoBaseTask|default|{"serviceTimeMs":20,"maxConcurrency":2}';
    await store.putProfile(profile(key, 'cpu'));
    t.deepEqual(await peer.getProfile(key, 'cpu'), profile(key, 'cpu'));
    t.is(await peer.getProfile(key, 'nvidia-a100'), undefined);
    t.is(await peer.getProfile('other', 'cpu'), undefined);
  });

  it('putProfile replaces the profile of the same key and device kind; listProfiles orders by key then kind', async (t, { store, peer }) => {
    await store.putProfile(profile('b', 'cpu'));
    await store.putProfile(profile('a', 'gpu'));
    await store.putProfile(profile('a', 'cpu', 50));
    await store.putProfile(profile('a', 'cpu', 70));
    t.deepEqual(await peer.listProfiles(), [profile('a', 'cpu', 70), profile('a', 'gpu'), profile('b', 'cpu')]);
  });

  it('putExecutorStats keeps the latest stats per executor; listExecutorStats filters by task', async (t, { store, peer }) => {
    const stats = (executorId: string, taskId: string, latencyMs: number) => ({ executorId, taskId, latencyMs, concurrency: 1.5, samples: 40, updatedAt: 1_700_000_000_000 });
    await store.putExecutorStats(stats('e2', 'task-a', 30));
    await store.putExecutorStats(stats('e1', 'task-a', 20));
    await store.putExecutorStats(stats('e1', 'task-a', 25.5));
    await store.putExecutorStats(stats('e3', 'task-b', 10));
    t.deepEqual(await peer.listExecutorStats('task-a'), [stats('e1', 'task-a', 25.5), stats('e2', 'task-a', 30)]);
    t.deepEqual((await peer.listExecutorStats()).map((s) => s.executorId), ['e1', 'e2', 'e3']);
  });

  // ---------- routes ----------

  it('putExecutor then getExecutor returns an equal route', async (t, { store }) => {
    const route = sampleRoute(1, 'task-a', { outstanding: 3, state: 'ready' });
    await store.putExecutor(route);
    t.deepEqual(await store.getExecutor(route.executorId), route);
  });

  it('getExecutor returns undefined for an unknown executor', async (t, { store }) => {
    t.is(await store.getExecutor('exec-unknown'), undefined);
  });

  it('listExecutors with a task id lists only that task’s executors', async (t, { store }) => {
    await store.putExecutor(sampleRoute(2, 'task-a'));
    await store.putExecutor(sampleRoute(1, 'task-a'));
    await store.putExecutor(sampleRoute(3, 'task-b'));
    t.deepEqual(await store.listExecutors('task-a'), [sampleRoute(1, 'task-a'), sampleRoute(2, 'task-a')]);
    t.deepEqual(await store.listExecutors('task-c'), []);
  });

  it('listExecutors without a task id lists every executor', async (t, { store }) => {
    await store.putExecutor(sampleRoute(1, 'task-a'));
    await store.putExecutor(sampleRoute(2, 'task-b'));
    t.deepEqual(await store.listExecutors(), [sampleRoute(1, 'task-a'), sampleRoute(2, 'task-b')]);
  });

  it('putExecutor with another task id moves the executor to that task', async (t, { store }) => {
    await store.putExecutor(sampleRoute(1, 'task-a'));
    await store.putExecutor(sampleRoute(1, 'task-b'));
    t.deepEqual(await store.listExecutors('task-a'), []);
    t.deepEqual(await store.listExecutors('task-b'), [sampleRoute(1, 'task-b')]);
  });

  it('setExecutorState changes only the state', async (t, { store }) => {
    await store.putExecutor(sampleRoute(1, 'task-a', { outstanding: 2 }));
    await store.setExecutorState('exec-1', 'draining');
    t.deepEqual(await store.getExecutor('exec-1'), sampleRoute(1, 'task-a', { outstanding: 2, state: 'draining' }));
  });

  it('setExecutorState rejects an unknown executor with STORE_NOT_FOUND', async (t, { store }) => {
    await t.throwsAsync(store.setExecutorState('exec-unknown', 'ready'), { code: 'STORE_NOT_FOUND' });
  });

  it('adjustOutstanding adds the delta and returns the new count', async (t, { store }) => {
    await store.putExecutor(sampleRoute(1, 'task-a', { outstanding: 2 }));
    t.is(await store.adjustOutstanding('exec-1', 3), 5);
    t.is(await store.adjustOutstanding('exec-1', -4), 1);
    t.is((await store.getExecutor('exec-1'))?.outstanding, 1);
  });

  it('adjustOutstanding under concurrency through two handles loses no update', async (t, { store, peer }) => {
    await store.putExecutor(sampleRoute(1, 'task-a'));
    const ups = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? store : peer).adjustOutstanding('exec-1', 1)));
    t.deepEqual(ups.sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i + 1));
    await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? peer : store).adjustOutstanding('exec-1', -1)));
    t.is((await store.getExecutor('exec-1'))?.outstanding, 30);
  });

  it('adjustOutstanding rejects an unknown executor with STORE_NOT_FOUND', async (t, { store }) => {
    await t.throwsAsync(store.adjustOutstanding('exec-unknown', 1), { code: 'STORE_NOT_FOUND' });
  });

  it('adjustOutstanding rejects a fractional delta', async (t, { store }) => {
    await store.putExecutor(sampleRoute(1, 'task-a'));
    await t.throwsAsync(store.adjustOutstanding('exec-1', 0.5), { instanceOf: RangeError });
    t.is((await store.getExecutor('exec-1'))?.outstanding, 0);
  });

  it('deleteExecutor removes the route from every listing and returns true', async (t, { store }) => {
    await store.putExecutor(sampleRoute(1, 'task-a'));
    t.true(await store.deleteExecutor('exec-1'));
    t.is(await store.getExecutor('exec-1'), undefined);
    t.deepEqual(await store.listExecutors('task-a'), []);
    t.deepEqual(await store.listExecutors(), []);
  });

  it('deleteExecutor returns false for an unknown executor', async (t, { store }) => {
    t.false(await store.deleteExecutor('exec-unknown'));
  });

  it('executor routes returned are copies', async (t, { store }) => {
    await store.putExecutor(sampleRoute(1, 'task-a'));
    const got = (await store.getExecutor('exec-1'))!;
    got.sidecarRanks.push(7);
    got.outstanding = 9;
    t.deepEqual(await store.getExecutor('exec-1'), sampleRoute(1, 'task-a'));
  });

  // ---------- sidecar tensor metadata ----------

  it('putChunk then getChunk returns equal metadata for a tensor and an object', async (t, { store }) => {
    const tensor = sampleChunk('aa01', 0);
    const object = sampleChunk('aa01', 1, {
      kind: 'object',
      dtype: undefined,
      shape: undefined,
      location: { kind: 'remote', host: '10.0.0.2', port: 10001 },
    });
    delete object.dtype;
    delete object.shape;
    await store.putChunk(tensor);
    await store.putChunk(object);
    t.deepEqual([await store.getChunk('aa01', 0), await store.getChunk('aa01', 1)], [tensor, object]);
  });

  it('getChunk returns undefined for an unknown chunk', async (t, { store }) => {
    await store.putChunk(sampleChunk('aa01', 0));
    t.is(await store.getChunk('aa01', 1), undefined);
  });

  it('listChunks with an id lists only that id’s chunks in chunk order', async (t, { store }) => {
    await store.putChunk(sampleChunk('aa01', 2));
    await store.putChunk(sampleChunk('bb02', 0));
    await store.putChunk(sampleChunk('aa01', 0));
    t.deepEqual(await store.listChunks('aa01'), [sampleChunk('aa01', 0), sampleChunk('aa01', 2)]);
  });

  it('listChunks without an id lists every chunk', async (t, { store }) => {
    await store.putChunk(sampleChunk('bb02', 0));
    await store.putChunk(sampleChunk('aa01', 0));
    t.deepEqual(await store.listChunks(), [sampleChunk('aa01', 0), sampleChunk('bb02', 0)]);
  });

  it('deleteChunk removes the chunk and returns true', async (t, { store }) => {
    await store.putChunk(sampleChunk('aa01', 0));
    await store.putChunk(sampleChunk('aa01', 1));
    t.true(await store.deleteChunk('aa01', 0));
    t.is(await store.getChunk('aa01', 0), undefined);
    t.deepEqual(await store.listChunks(), [sampleChunk('aa01', 1)]);
  });

  it('deleteChunk returns false for an unknown chunk', async (t, { store }) => {
    t.false(await store.deleteChunk('aa01', 0));
  });

  it('takeExpiredChunks takes exactly the chunks expiring at or before now and removes them', async (t, { store }) => {
    await store.putChunk(sampleChunk('aa01', 0, { expiresAt: 1000 }));
    await store.putChunk(sampleChunk('aa01', 1, { expiresAt: 2000 }));
    await store.putChunk(sampleChunk('aa01', 2, { expiresAt: 3000 }));
    await store.putChunk(sampleChunk('bb02', 0, { expiresAt: 1500 }));
    const taken = await store.takeExpiredChunks(2000);
    t.deepEqual(taken, [
      sampleChunk('aa01', 0, { expiresAt: 1000 }),
      sampleChunk('aa01', 1, { expiresAt: 2000 }),
      sampleChunk('bb02', 0, { expiresAt: 1500 }),
    ]);
    t.deepEqual(await store.listChunks(), [sampleChunk('aa01', 2, { expiresAt: 3000 })]);
    t.deepEqual(await store.listChunks('bb02'), []);
  });

  it('takeExpiredChunks returns nothing when nothing has expired', async (t, { store }) => {
    await store.putChunk(sampleChunk('aa01', 0, { expiresAt: 5000 }));
    t.deepEqual(await store.takeExpiredChunks(4999), []);
    t.is((await store.listChunks()).length, 1);
  });

  it('putChunk again with a later expiresAt postpones its expiry', async (t, { store }) => {
    await store.putChunk(sampleChunk('aa01', 0, { expiresAt: 1000 }));
    await store.putChunk(sampleChunk('aa01', 0, { expiresAt: 9000 }));
    t.deepEqual(await store.takeExpiredChunks(5000), []);
  });

  it('chunk metadata returned is a copy', async (t, { store }) => {
    await store.putChunk(sampleChunk('aa01', 0));
    const got = (await store.getChunk('aa01', 0))!;
    got.shape!.push(3);
    t.deepEqual(await store.getChunk('aa01', 0), sampleChunk('aa01', 0));
  });

  // ---------- sidecar registry ----------

  it('registerSidecar then getSidecar and listSidecars return the registration', async (t, { store }) => {
    await store.registerSidecar(sampleSidecar('node-b', { ranks: [2] }));
    await store.registerSidecar(sampleSidecar('node-a'));
    t.deepEqual(await store.getSidecar('node-b'), sampleSidecar('node-b', { ranks: [2] }));
    t.deepEqual(await store.listSidecars(), [sampleSidecar('node-a'), sampleSidecar('node-b', { ranks: [2] })]);
    t.is(await store.getSidecar('node-c'), undefined);
  });

  it('renewSidecar moves the lease of the instance that holds it', async (t, { store }) => {
    await store.registerSidecar(sampleSidecar('node-a', { leaseExpiresAt: 1000 }));
    t.true(await store.renewSidecar('node-a', 'node-a-i1', 5000));
    t.is((await store.getSidecar('node-a'))!.leaseExpiresAt, 5000);
  });

  it('renewSidecar returns false for another instance or an unknown node and changes nothing', async (t, { store }) => {
    await store.registerSidecar(sampleSidecar('node-a', { leaseExpiresAt: 1000 }));
    t.false(await store.renewSidecar('node-a', 'node-a-i2', 5000));
    t.false(await store.renewSidecar('node-b', 'node-b-i1', 5000));
    t.is((await store.getSidecar('node-a'))!.leaseExpiresAt, 1000);
    t.is(await store.getSidecar('node-b'), undefined);
  });

  it('a new instance of a node replaces the old registration and drops the chunk entries naming that node', async (t, { store }) => {
    await store.registerSidecar(sampleSidecar('node-a'));
    await store.putChunk(sampleChunk('aa01', 0, { node: 'node-a' }));
    await store.putChunk(sampleChunk('aa01', 1, { node: 'node-b' }));
    await store.registerSidecar(sampleSidecar('node-a', { instance: 'node-a-i2', peerPort: 10101 }));
    t.deepEqual(await store.getSidecar('node-a'), sampleSidecar('node-a', { instance: 'node-a-i2', peerPort: 10101 }));
    t.deepEqual(await store.listChunks(), [sampleChunk('aa01', 1, { node: 'node-b' })]);
  });

  it('registering the same instance again keeps its chunk entries', async (t, { store }) => {
    await store.registerSidecar(sampleSidecar('node-a'));
    await store.putChunk(sampleChunk('aa01', 0, { node: 'node-a' }));
    await store.registerSidecar(sampleSidecar('node-a', { leaseExpiresAt: 2_000_000_000_000 }));
    t.deepEqual(await store.listChunks(), [sampleChunk('aa01', 0, { node: 'node-a' })]);
  });

  it('deleteSidecar removes the registration and every chunk entry naming its node', async (t, { store }) => {
    await store.registerSidecar(sampleSidecar('node-a'));
    await store.registerSidecar(sampleSidecar('node-b'));
    await store.putChunk(sampleChunk('aa01', 0, { node: 'node-a' }));
    await store.putChunk(sampleChunk('bb02', 0, { node: 'node-a' }));
    await store.putChunk(sampleChunk('bb02', 1, { node: 'node-b' }));
    t.true(await store.deleteSidecar('node-a', 'node-a-i1'));
    t.is(await store.getSidecar('node-a'), undefined);
    t.deepEqual(await store.listSidecars(), [sampleSidecar('node-b')]);
    t.deepEqual(await store.listChunks(), [sampleChunk('bb02', 1, { node: 'node-b' })]);
    t.deepEqual(await store.listChunks('aa01'), []);
  });

  it('deleteSidecar by another instance returns false and removes nothing', async (t, { store }) => {
    await store.registerSidecar(sampleSidecar('node-a'));
    await store.putChunk(sampleChunk('aa01', 0, { node: 'node-a' }));
    t.false(await store.deleteSidecar('node-a', 'node-a-i0'));
    t.false(await store.deleteSidecar('node-b', 'node-b-i1'));
    t.deepEqual(await store.getSidecar('node-a'), sampleSidecar('node-a'));
    t.is((await store.listChunks()).length, 1);
  });

  it('takeExpiredSidecars takes exactly the sidecars whose lease ended, with their chunk entries', async (t, { store }) => {
    await store.registerSidecar(sampleSidecar('node-a', { leaseExpiresAt: 1000 }));
    await store.registerSidecar(sampleSidecar('node-b', { leaseExpiresAt: 2000 }));
    await store.registerSidecar(sampleSidecar('node-c', { leaseExpiresAt: 3000 }));
    await store.putChunk(sampleChunk('aa01', 0, { node: 'node-a', expiresAt: 9000 }));
    await store.putChunk(sampleChunk('aa01', 1, { node: 'node-c', expiresAt: 9000 }));
    await store.putChunk(sampleChunk('bb02', 0, { node: 'node-b', expiresAt: 9000 }));
    const taken = await store.takeExpiredSidecars(2000);
    t.deepEqual(taken, [sampleSidecar('node-a', { leaseExpiresAt: 1000 }), sampleSidecar('node-b', { leaseExpiresAt: 2000 })]);
    t.deepEqual(await store.listSidecars(), [sampleSidecar('node-c', { leaseExpiresAt: 3000 })]);
    t.deepEqual(await store.listChunks(), [sampleChunk('aa01', 1, { node: 'node-c', expiresAt: 9000 })]);
    t.deepEqual(await store.takeExpiredSidecars(2000), []);
  });

  it('a renewed lease is not taken by takeExpiredSidecars', async (t, { store }) => {
    await store.registerSidecar(sampleSidecar('node-a', { leaseExpiresAt: 1000 }));
    await store.renewSidecar('node-a', 'node-a-i1', 4000);
    t.deepEqual(await store.takeExpiredSidecars(2000), []);
    t.is((await store.listSidecars()).length, 1);
  });

  // ---------- change notifications ----------

  it('subscribe sees app changes made through the other handle', async (t, { store, peer }) => {
    const { seen } = watch(store);
    await store.subscriptionReady();
    await peer.putApp(sampleApp(1));
    await peer.setAppState(sampleApp(1).appId, 'ready');
    await peer.deleteApp(sampleApp(1).appId);
    await waitForCount(seen, 3);
    const id = sampleApp(1).appId;
    t.deepEqual(seen, [
      { kind: 'app', id, op: 'put' },
      { kind: 'app', id, op: 'put' },
      { kind: 'app', id, op: 'delete' },
    ]);
  });

  it('subscribe sees task, route and tensor changes made through the other handle', async (t, { store, peer }) => {
    const { seen } = watch(store);
    await store.subscriptionReady();
    await peer.acquireTask(sampleTask(1));
    await peer.putExecutor(sampleRoute(1, 'task-a'));
    await peer.setExecutorState('exec-1', 'ready');
    await peer.putChunk(sampleChunk('aa01', 3));
    await peer.deleteChunk('aa01', 3);
    await peer.deleteExecutor('exec-1');
    await peer.deleteTask(sampleTask(1).taskId);
    await waitForCount(seen, 7);
    t.deepEqual(seen, [
      { kind: 'task', id: sampleTask(1).taskId, op: 'put' },
      { kind: 'route', id: 'exec-1', taskId: 'task-a', op: 'put' },
      { kind: 'route', id: 'exec-1', taskId: 'task-a', op: 'put' },
      { kind: 'tensor', id: 'aa01', chunk: 3, op: 'put' },
      { kind: 'tensor', id: 'aa01', chunk: 3, op: 'delete' },
      { kind: 'route', id: 'exec-1', taskId: 'task-a', op: 'delete' },
      { kind: 'task', id: sampleTask(1).taskId, op: 'delete' },
    ]);
  });

  it('takeExpiredChunks publishes a tensor delete per chunk taken', async (t, { store, peer }) => {
    await peer.putChunk(sampleChunk('aa01', 0, { expiresAt: 10 }));
    await peer.putChunk(sampleChunk('aa01', 1, { expiresAt: 10 }));
    const { seen } = watch(store);
    await store.subscriptionReady();
    await peer.takeExpiredChunks(10);
    await waitForCount(seen, 2);
    const chunkOf = (c: StoreChange) => (c.kind === 'tensor' ? c.chunk : -1);
    t.deepEqual(
      seen.sort((a, b) => chunkOf(a) - chunkOf(b)),
      [0, 1].map((chunk) => ({ kind: 'tensor', id: 'aa01', chunk, op: 'delete' })),
    );
  });

  it('registering, renewing and removing sidecars publishes a sidecar put and deletes (renewal publishes nothing)', async (t, { store, peer }) => {
    const { seen } = watch(store);
    await store.subscriptionReady();
    await peer.registerSidecar(sampleSidecar('node-a', { leaseExpiresAt: 1000 }));
    await peer.renewSidecar('node-a', 'node-a-i1', 1500);
    await peer.putChunk(sampleChunk('aa01', 0, { node: 'node-a' }));
    await peer.takeExpiredSidecars(2000);
    await peer.registerSidecar(sampleSidecar('node-b'));
    await peer.deleteSidecar('node-b', 'node-b-i1');
    await waitForCount(seen, 6);
    t.deepEqual(seen, [
      { kind: 'sidecar', id: 'node-a', op: 'put' },
      { kind: 'tensor', id: 'aa01', chunk: 0, op: 'put' },
      { kind: 'tensor', id: 'aa01', chunk: 0, op: 'delete' },
      { kind: 'sidecar', id: 'node-a', op: 'delete' },
      { kind: 'sidecar', id: 'node-b', op: 'put' },
      { kind: 'sidecar', id: 'node-b', op: 'delete' },
    ]);
  });

  it('unsubscribe stops delivery to that listener only', async (t, { store, peer }) => {
    const stopped = watch(store);
    const kept = watch(store);
    await store.subscriptionReady();
    stopped.stop();
    await peer.putApp(sampleApp(1));
    await waitForCount(kept.seen, 1);
    t.deepEqual(stopped.seen, []);
  });

  it('a listener that throws does not stop the others', async (t, { store, peer }) => {
    store.subscribe(() => {
      throw new Error('listener bug');
    });
    const { seen } = watch(store);
    await store.subscriptionReady();
    await peer.putApp(sampleApp(1));
    await peer.deleteApp(sampleApp(1).appId);
    await waitForCount(seen, 2);
    t.is(seen.length, 2);
  });

  // ---------- load counters ----------

  it('addCounters from two handles add up; a missing counter reads 0', async (t, { store, peer }) => {
    await Promise.all([
      ...Array.from({ length: 20 }, () => store.addCounters([{ name: 'arrivals:a:1', delta: 1 }, { name: 'arrivals:b:1', delta: 2 }], 60_000)),
      ...Array.from({ length: 20 }, () => peer.addCounters([{ name: 'arrivals:a:1', delta: 1 }], 60_000)),
    ]);
    t.deepEqual(await store.readCounters(['arrivals:a:1', 'arrivals:b:1', 'arrivals:none:1']), [40, 40, 0]);
  });

  it('a counter past its TTL reads 0', async (t, { store }) => {
    await store.addCounters([{ name: 'short', delta: 5 }], 50);
    await waitUntil('the counter to expire', async () => (await store.readCounters(['short']))[0] === 0, { timeoutMs: 10_000, intervalMs: 25 });
    t.deepEqual(await store.readCounters(['short']), [0]);
  });

  // ---------- autoscaling state ----------

  it('putAutoscale then getAutoscale / listAutoscale return the record; deleteAutoscale removes it', async (t, { store, peer }) => {
    const record = { taskId: 'task-b', policy: { min: 0, max: 3, target: 2 }, source: 'admin' as const, desired: 2, lastDecision: { at: 1, from: 1, to: 2, reason: 'load' } };
    await store.putAutoscale(record);
    await store.putAutoscale({ taskId: 'task-a', source: 'manual', desired: 1 });
    t.deepEqual(await peer.getAutoscale('task-b'), record);
    t.deepEqual((await peer.listAutoscale()).map((r) => r.taskId), ['task-a', 'task-b']);
    t.true(await store.deleteAutoscale('task-b'));
    t.false(await store.deleteAutoscale('task-b'));
    t.is(await peer.getAutoscale('task-b'), undefined);
  });

  it('patchAutoscale merges concurrent patches of different fields without losing one', async (t, { store, peer }) => {
    await store.putAutoscale({ taskId: 'task-p', source: 'default', policy: { min: 1, max: 4, target: 2 }, desired: 1 });
    const decision = { at: 1764085463123, from: 1, to: 3, reason: 'load' };
    // A policy change and a decision record racing (the resource manager's loop and its HTTP API): both must land.
    await Promise.all([
      store.patchAutoscale('task-p', { policy: { min: 0, max: 2, sloMs: 250 }, source: 'admin' }),
      peer.patchAutoscale('task-p', { desired: 3, lastDecision: decision }),
      store.patchAutoscale('task-p', { coldStart: { ms: 1234, at: 1764085463999 } }),
    ]);
    t.deepEqual(await peer.getAutoscale('task-p'), {
      taskId: 'task-p', source: 'admin', policy: { min: 0, max: 2, sloMs: 250 }, desired: 3, lastDecision: decision, coldStart: { ms: 1234, at: 1764085463999 },
    });
  });

  it('patchAutoscale creates only from `create`, keeps a record of a listed source, and removes a null policy', async (t, { store, peer }) => {
    t.is(await store.patchAutoscale('task-q', { desired: 2 }), undefined);
    t.is(await peer.getAutoscale('task-q'), undefined);
    const created = await store.patchAutoscale('task-q', {}, { create: { taskId: 'task-q', source: 'default', policy: { min: 1, max: 2, target: 2 }, desired: 1 } });
    t.deepEqual(created, { taskId: 'task-q', source: 'default', policy: { min: 1, max: 2, target: 2 }, desired: 1 });
    await store.patchAutoscale('task-q', { source: 'admin', policy: { min: 0, max: 2, target: 1 } });
    const kept = await peer.patchAutoscale('task-q', { source: 'app', policy: { min: 2, max: 2, target: 2 } }, { unlessSource: ['admin', 'manual'] });
    t.deepEqual(kept?.policy, { min: 0, max: 2, target: 1 });
    t.is(kept?.source, 'admin');
    const manual = await store.patchAutoscale('task-q', { source: 'manual', policy: null });
    t.deepEqual(manual, { taskId: 'task-q', source: 'manual', desired: 1 });
    t.deepEqual(await peer.getAutoscale('task-q'), manual);
  });

  it('wakeTask publishes a wake change for the task', async (t, { store, peer }) => {
    const { seen } = watch(store);
    await store.subscriptionReady();
    await peer.wakeTask('task-z');
    await waitForCount(seen, 1);
    t.deepEqual(seen, [{ kind: 'wake', id: 'task-z', op: 'put' }]);
  });

  // ---------- generation ----------

  it('claimEpoch sets the generation once: later candidates get the first one back', async (t, { store, peer }) => {
    t.is(await store.claimEpoch('gen-a'), 'gen-a');
    t.is(await peer.claimEpoch('gen-b'), 'gen-a');
    t.is(await store.claimEpoch('gen-c'), 'gen-a');
  });

  // ---------- lifecycle ----------

  it('close is idempotent and later calls reject with STORE_CLOSED', async (t, { store }) => {
    await store.close();
    await store.close();
    await t.throwsAsync(store.getApp('app-1'), { instanceOf: StoreClosedError, code: 'STORE_CLOSED' });
  });
}
