import test from 'ava';
import { RedisStore } from '../../../../control/store/redis.js';
import { startRedis, type RedisServer } from '../../../helpers/redis.js';
import { uniquePrefix } from '../../../helpers/ids.js';
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
