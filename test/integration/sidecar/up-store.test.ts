/** `cornserve up --redis` runs its sidecars with the Redis store: they register there, and deregister when it stops. */
import test from 'ava';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { startPlatform } from '../../helpers/platform.js';
import { createStore } from '../../../control/store/index.js';

let redis: RedisServer;
test.before(async () => { redis = await startRedis(); });
test.after.always(async () => { await redis?.stop(); });

test('the sidecars of `up --redis` register in the store and leave it when up stops', async (t) => {
  const prefix = uniquePrefix('up-sidecar');
  const p = await startPlatform({ redisUrl: redis.url, redisPrefix: prefix, sidecars: true, devices: 2 });
  const store = createStore({ redisUrl: redis.url, prefix });
  t.teardown(() => store.close());
  try {
    const [node] = await p.platform.listNodes(); // the local platform is one node
    const registered = await store.listSidecars();
    t.deepEqual(registered.map((s) => [s.node, s.ranks]), [[node!.node, [0, 1]]]);
    t.true(registered[0]!.leaseExpiresAt > Date.now());
  } finally {
    await p.stop();
  }
  t.deepEqual(await store.listSidecars(), []);
});
