/**
 * With a Redis store, where each chunk lives is visible from any node; the entry goes when the chunk is freed.
 * (A chunk sent to another node is recorded by its producer's node while held there: discovery.test.ts.)
 */
import test from 'ava';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { startSidecars, type SidecarCluster } from '../../helpers/sidecar.js';
import { createStore, type Store, type TensorChunkMeta } from '../../../control/store/index.js';
import { waitUntil } from '../../../lib/wait.js';
import { makeTensor, newId } from './transfer.js';

let redis: RedisServer;
let sc: SidecarCluster;
let store: Store;
test.before(async () => {
  redis = await startRedis();
  const prefix = uniquePrefix('sidecar');
  sc = await startSidecars({ nodes: [[0, 1], [2, 3]], storeUrl: redis.url, storePrefix: prefix });
  store = createStore({ redisUrl: redis.url, prefix });
  await store.ready();
});
test.after.always(async () => {
  await store?.close();
  await sc?.stop();
  await redis?.stop();
});

test('a chunk sent in one node is found in the Redis store with its node, location, dtype and shape', async (t) => {
  const id = newId();
  const prod = await sc.client(0);
  const cons = await sc.client(1);
  await prod.send(makeTensor('bf16', [13, 4096]), id, [[1]], { ttlMs: 60_000 });
  await cons.recv(id);
  const meta: TensorChunkMeta = await waitUntil('metadata in Redis', () => store.getChunk(id, 0));
  t.like(meta, { id, chunk: 0, node: 'n0', producerRank: 0, kind: 'tensor', dtype: 'bf16', shape: [13, 4096], size: 13 * 4096 * 2 });
  t.is(meta.location.kind, 'shm');
  t.true(meta.expiresAt > Date.now());
  await cons.markDone(id);
  await waitUntil('metadata removed', async () => (await store.getChunk(id, 0)) === undefined);
});
