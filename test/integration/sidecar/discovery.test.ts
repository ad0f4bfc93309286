/**
 * Sidecars started with no fixed peers find each other through a real Redis store: they register (ranks, address,
 * lease), a producer's sidecar records where each chunk it holds lives, a consumer's sidecar looks a waiting chunk up
 * and dials its holder, and a crashed sidecar's entries are reaped after its lease.
 */
import test, { type ExecutionContext } from 'ava';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { startSidecars, type SidecarCluster, type StartSidecarsOptions } from '../../helpers/sidecar.js';
import { createStore, type Store } from '../../../control/store/index.js';
import { waitUntil } from '../../../lib/wait.js';
import { assertSameTensor, makeTensor, newId } from './transfer.js';

let redis: RedisServer;
test.before(async () => { redis = await startRedis(); });
test.after.always(async () => { await redis?.stop(); });

/** Sidecars with `peers: 'store'` on a fresh prefix, and a store handle on the same prefix (both stopped at teardown). */
async function cluster(t: ExecutionContext, nodes: number[][], o: Partial<StartSidecarsOptions> = {}): Promise<{ sc: SidecarCluster; store: Store }> {
  const prefix = uniquePrefix('discovery');
  const sc = await startSidecars({ nodes, storeUrl: redis.url, storePrefix: prefix, peers: 'store', ...o });
  const store = createStore({ redisUrl: redis.url, prefix });
  t.teardown(async () => { await store.close(); await sc.stop(); });
  await store.ready();
  return { sc, store };
}

/** Sends one tensor from `from` to `to` and checks what arrives. */
async function transfer(t: ExecutionContext, sc: SidecarCluster, from: number, to: number, seed: number): Promise<void> {
  const id = newId();
  const data = makeTensor('f32', [64, 256], seed);
  const prod = await sc.client(from);
  const cons = await sc.client(to);
  await prod.send(data, id, [[to]]);
  assertSameTensor(t, await cons.recv(id), data, `tensor ${seed}`);
  await cons.markDone(id);
}

test('a sidecar started with no fixed peers receives a tensor from a peer it learns of through the Redis store', async (t) => {
  const { sc, store } = await cluster(t, [[0, 1], [2]]);
  t.deepEqual((await store.listSidecars()).map((s) => [s.node, s.ranks, s.peerPort]), [['n0', [0, 1], sc.nodes[0]!.peerPort], ['n1', [2], sc.nodes[1]!.peerPort]]);
  const id = newId();
  const inNode = newId();
  const data = makeTensor('bf16', [13, 4096]); // above INLINE_MAX_BYTES: held in a slot (a smaller one is in the heap: location 'remote')
  const prod = await sc.client(0);
  await sc.client(1);
  await prod.send(data, inNode, [[1]]); // held for rank 1 on n0: nobody on another node asks, so no entry
  await prod.send(data, id, [[2]]); // n1 has not dialed n0: the chunk waits on n0, recorded in the store under n0
  const entry = await waitUntil('the chunk entry', () => store.getChunk(id, 0), { timeoutMs: 30_000 });
  t.like(entry, { id, chunk: 0, node: 'n0', producerRank: 0, kind: 'tensor', dtype: 'bf16', shape: [13, 4096], size: 13 * 4096 * 2 });
  t.like(entry.location, { kind: 'shm', length: 13 * 4096 * 2 });
  t.true(entry.expiresAt > Date.now());
  t.is(await store.getChunk(inNode, 0), undefined); // written before `id`'s would have been
  const cons = await sc.client(2);
  assertSameTensor(t, await cons.recv(id), data, 'received on n1');
  await cons.markDone(id);
  const health = await sc.nodes[1]!.health() as unknown as { peers: Array<{ node: string; connected: boolean }>; store: { lookups: number } };
  t.deepEqual(health.peers, [{ node: 'n0', connected: true }]);
  t.true(health.store.lookups >= 1);
  await waitUntil('the entry removed once the chunk left n0', async () => (await store.getChunk(id, 0)) === undefined, { timeoutMs: 30_000 });
});

test('a peer sidecar that restarts on a new port is found again', async (t) => {
  const { sc, store } = await cluster(t, [[0], [1]]);
  await transfer(t, sc, 0, 1, 1);
  const producer = sc.nodes[0]!;
  const oldPort = producer.peerPort;
  await producer.stop();
  await producer.start({ newPorts: true });
  t.not(producer.peerPort, oldPort);
  t.is((await store.getSidecar('n0'))?.peerPort, producer.peerPort);
  await transfer(t, sc, 0, 1, 2); // the consumer's sidecar still dials the old port until it asks the store
  const consumer = sc.nodes[1]!;
  await consumer.stop();
  await consumer.start({ newPorts: true });
  await transfer(t, sc, 0, 1, 3);
});

test('a crashed sidecar’s registration and chunk entries are removed after its lease', async (t) => {
  const { sc, store } = await cluster(t, [[0], [1]], { leaseMs: 1000 });
  const id = newId();
  const prod = await sc.client(1);
  await prod.send(makeTensor('f32', [8, 8]), id, [[0]]); // nobody on n0 reads: n0 never dials n1, the chunk stays held on n1
  t.like(await waitUntil('the chunk entry', () => store.getChunk(id, 0), { timeoutMs: 30_000 }), { node: 'n1' });
  t.truthy(await store.getSidecar('n1'));
  await sc.nodes[1]!.kill();
  await waitUntil('n1 reaped', async () => (await store.getSidecar('n1')) === undefined, { timeoutMs: 30_000 });
  t.is(await store.getChunk(id, 0), undefined);
  t.deepEqual((await store.listSidecars()).map((s) => s.node), ['n0']); // the live one keeps its lease
  await sc.nodes[1]!.start(); // removes the crashed one's shared memory (a dead pid's segment)
});
