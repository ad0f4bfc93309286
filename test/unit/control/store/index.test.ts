import test from 'ava';
import { createStore, MemoryStore, RedisStore } from '../../../../control/store/index.js';

test('createStore without a Redis URL makes a MemoryStore', async (t) => {
  const store = createStore({});
  t.teardown(() => store.close());
  t.true(store instanceof MemoryStore);
});

test('createStore with a Redis URL makes a RedisStore with the given prefix', async (t) => {
  const store = createStore({ redisUrl: 'redis://127.0.0.1:1', prefix: 'custom:' });
  t.teardown(() => store.close());
  t.true(store instanceof RedisStore);
  t.is((store as RedisStore).prefix, 'custom:');
});
