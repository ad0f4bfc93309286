import test from 'ava';
import { storeKeys } from '../../../../control/store/keys.js';

test('every key and the channel start with the prefix', (t) => {
  const k = storeKeys('cs-test:');
  const all = [
    k.app('a'), k.apps, k.appNames, k.task('t'), k.tasks, k.inventory, k.executor('e'), k.executors,
    k.executorsOf('t'), k.chunk('aa', 1), k.chunkByMember('aa:1'), k.chunksOf('aa'), k.chunkExpiry, k.changes,
    k.sidecar('n0'), k.sidecarLeases, k.profiles, k.executorStats,
    k.counter('arrivals:t:1'), k.autoscale,
  ];
  t.deepEqual(all.filter((key) => !key.startsWith('cs-test:')), []);
});

test('the default prefix is cornserve:', (t) => {
  t.is(storeKeys().apps, 'cornserve:apps');
});

test('a chunk key built from its expiry member equals the chunk key', (t) => {
  const k = storeKeys();
  t.is(k.chunkByMember('aa01:7'), k.chunk('aa01', 7));
});

test('allKeysPattern escapes glob characters of the prefix', (t) => {
  t.is(storeKeys('a*b?[c]:').allKeysPattern, 'a\\*b\\?\\[c\\]:*');
});

test('the prefixes handed to Lua scripts rebuild the same keys', (t) => {
  const k = storeKeys();
  t.deepEqual(
    [k.chunkPrefix + 'aa01:7', k.chunksOfPrefix + 'aa01', k.executorsOfPrefix + 'task-a'],
    [k.chunk('aa01', 7), k.chunksOf('aa01'), k.executorsOf('task-a')],
  );
});
