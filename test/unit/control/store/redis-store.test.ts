import test, { type ExecutionContext } from 'ava';
import { Redis } from 'ioredis';
import { STORE_RETRY_AFTER_S, StoreUnavailableError } from '../../../../lib/store-errors.js';
import { errorHeaders, toErrorBody } from '../../../../lib/http.js';
import { storeKeys } from '../../../../control/store/keys.js';
import { RedisStore } from '../../../../control/store/redis.js';
import type { StoreChange } from '../../../../lib/store.js';
import { freePort } from '../../../../lib/net.js';
import { waitUntil, withDeadline } from '../../../../lib/wait.js';
import { uniquePrefix } from '../../../helpers/ids.js';
import { startRedis, type RedisServer } from '../../../helpers/redis.js';
import { sampleApp, sampleChunk, sampleRoute, sampleTask } from '../../../helpers/store-records.js';
import { storeConformance } from './conformance.js';

let server: RedisServer | undefined;
test.before(async () => {
  server = await startRedis();
});
test.after.always(async () => {
  await server?.stop();
});

// Two instances (two connections) on one prefix: the "other handle" really is another client.
storeConformance('RedisStore', async () => {
  const prefix = uniquePrefix('store');
  const store = new RedisStore({ url: server!.url, prefix });
  const peer = new RedisStore({ url: server!.url, prefix });
  return { store, peer, cleanup: async () => void (await Promise.all([store.close(), peer.close()])) };
});

// ---------- Redis-only behaviour ----------
// Serial tests run before the concurrent conformance tests (ava's order), so restarting or flushing
// the file's one server here disturbs nobody.

const outcome = <T>(p: Promise<T>) => p.then(() => undefined, (err: unknown) => err);

/** Keeps writing through `peer` (whose calls may fail while Redis comes back) until `seen` gets a change. */
async function publishUntilSeen(peer: RedisStore, seen: StoreChange[]): Promise<void> {
  let n = 0;
  const published = async () => {
    await outcome(peer.putApp(sampleApp(++n)));
    return seen.length > 0;
  };
  await waitUntil('a change published after the restart', published, { timeoutMs: 15_000, intervalMs: 200 });
}

function openStore(t: ExecutionContext, prefix = uniquePrefix('store')) {
  const store = new RedisStore({ url: server!.url, prefix });
  t.teardown(() => store.close());
  return store;
}

test.serial('a call during a Redis outage rejects with StoreUnavailableError', async (t) => {
  const store = openStore(t);
  await store.putApp(sampleApp(1));
  await server!.stop();
  t.teardown(() => server!.restart());
  // The deadline only guards against a hang; the assertion is about the error.
  const err = await withDeadline('getApp during the outage', outcome(store.getApp(sampleApp(1).appId)), Date.now() + 20_000);
  t.true(err instanceof StoreUnavailableError);
  t.is((err as StoreUnavailableError).code, 'STORE_UNAVAILABLE');
});

test.serial('an outage error is a 503 in the platform\'s words, with Retry-After (the client library\'s text stays in its cause)', async (t) => {
  const store = openStore(t);
  await store.putApp(sampleApp(1));
  await server!.stop();
  t.teardown(() => server!.restart());
  const err = await withDeadline('listApps during the outage', outcome(store.listApps()), Date.now() + 20_000);
  const { status, body } = toErrorBody(err);
  t.is(status, 503);
  t.is(body.error.code, 'STORE_UNAVAILABLE');
  t.regex(body.error.message, /^the store cannot be reached \(listApps\); retry in \d+ s$/);
  t.deepEqual(errorHeaders(err), { 'retry-after': String(STORE_RETRY_AFTER_S) });
  t.truthy((err as Error).cause);
});

test.serial('the same instance works again once Redis is back (scripts reloaded on the empty server)', async (t) => {
  const store = openStore(t);
  await store.acquireTask(sampleTask(1));
  await server!.restart();
  await waitUntil('store usable after restart', () => store.listTasks().then(() => true, () => false), { timeoutMs: 15_000 });
  t.deepEqual(await store.listTasks(), []); // the restarted server has no persistence
  t.deepEqual(await store.acquireTask(sampleTask(1)), { record: { ...sampleTask(1), usage: 1 }, created: true });
});

test.serial('a subscription resumes after a Redis restart', async (t) => {
  const prefix = uniquePrefix('store');
  const store = openStore(t, prefix);
  const peer = openStore(t, prefix);
  const seen: StoreChange[] = [];
  store.subscribe((change) => seen.push(change));
  await store.subscriptionReady();
  await server!.restart();
  await publishUntilSeen(peer, seen);
  t.like(seen[0], { kind: 'app', op: 'put' });
});

test.serial('a subscription made during an outage starts once Redis is back', async (t) => {
  const prefix = uniquePrefix('store');
  const store = openStore(t, prefix);
  const peer = openStore(t, prefix);
  await store.ready();
  await server!.stop();
  const seen: StoreChange[] = [];
  store.subscribe((change) => seen.push(change));
  t.true((await outcome(store.subscriptionReady())) instanceof StoreUnavailableError);
  await server!.restart();
  await publishUntilSeen(peer, seen);
  t.like(seen[0], { kind: 'app', op: 'put' });
});

test.serial('a call Redis does not answer within commandTimeoutMs rejects with StoreUnavailableError', async (t) => {
  const store = new RedisStore({ url: server!.url, prefix: uniquePrefix('store'), commandTimeoutMs: 200 });
  t.teardown(() => store.close());
  // Setup, not the behaviour: on a loaded machine connect + PING can take longer than 200 ms, and ready() may be retried.
  await waitUntil('the store is ready', () => store.ready().then(() => true, () => false), { timeoutMs: 20_000 });
  const admin = new Redis(server!.url);
  t.teardown(() => void admin.disconnect());
  // The server answers nobody for 5 s: far longer than the 200 ms timeout even if this process stalls before sending.
  await admin.call('CLIENT', 'PAUSE', '5000', 'ALL');
  const err = await withDeadline('getApp while Redis is paused', outcome(store.getApp('app-1')), Date.now() + 20_000);
  t.true(err instanceof StoreUnavailableError);
  await admin.ping(); // answered once the pause is over (CLIENT UNPAUSE waits too): the next tests see a live server
});

test.serial('every key the store writes lives under its prefix', async (t) => {
  const admin = new Redis(server!.url);
  t.teardown(() => void admin.disconnect());
  await admin.flushdb();
  const prefix = uniquePrefix('store');
  const store = openStore(t, prefix);
  await store.putApp(sampleApp(1));
  await store.acquireTask(sampleTask(1));
  await store.putInventory([{ node: 'node-a', devices: [] }]);
  await store.putExecutor(sampleRoute(1, sampleTask(1).taskId));
  await store.putChunk(sampleChunk('aa01', 0));
  await store.putChunk(sampleChunk('aa01', 1, { expiresAt: 1 }));
  await store.takeExpiredChunks(1);
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await admin.scan(cursor, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  t.true(keys.length >= 8);
  t.deepEqual(keys.filter((k) => !k.startsWith(prefix)), []);
});

test('a Redis error reply is not reported as unavailable', async (t) => {
  const prefix = uniquePrefix('store');
  const store = openStore(t, prefix);
  const admin = new Redis(server!.url);
  t.teardown(() => void admin.disconnect());
  await admin.set(storeKeys(prefix).app('app-1'), 'not a hash');
  const err = await outcome(store.getApp('app-1'));
  t.false(err instanceof StoreUnavailableError);
  t.regex(String(err), /WRONGTYPE/);
});

test('ready rejects with StoreUnavailableError when nothing listens', async (t) => {
  const store = new RedisStore({ url: `redis://127.0.0.1:${await freePort()}` });
  t.teardown(() => store.close());
  await t.throwsAsync(withDeadline('ready', store.ready(), Date.now() + 20_000), { instanceOf: StoreUnavailableError });
});

test('close leaves a shared connection open', async (t) => {
  const connection = new Redis(server!.url);
  t.teardown(() => void connection.disconnect());
  const store = new RedisStore({ url: server!.url, prefix: uniquePrefix('store'), connection });
  await store.putApp(sampleApp(1));
  store.subscribe(() => undefined);
  await store.subscriptionReady();
  await store.close();
  t.is(await connection.ping(), 'PONG');
});

test('stores with different prefixes share neither data nor changes', async (t) => {
  const a = openStore(t);
  const b = openStore(t);
  const seenByB: StoreChange[] = [];
  b.subscribe((change) => seenByB.push(change));
  await b.subscriptionReady();
  await a.putApp(sampleApp(1));
  await b.putApp(sampleApp(2));
  await waitUntil('b sees its own change', () => seenByB.length >= 1);
  t.is(await b.getApp(sampleApp(1).appId), undefined);
  t.deepEqual(seenByB, [{ kind: 'app', id: sampleApp(2).appId, op: 'put' }]);
});
