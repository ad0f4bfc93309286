/** The Store entries of a sidecar's chunks: written only for chunks still held after the delay, deleted when freed. */
import test from 'ava';
import { MemoryStore } from '../../../control/store/memory.js';
import { StoreMirror } from '../../../sidecar/server/mirror.js';
import { logger } from '../../../lib/log.js';
import { waitUntil } from '../../../lib/wait.js';
import { sampleChunk } from '../../helpers/store-records.js';

test('a chunk freed within the delay never gets a store entry; one held longer gets one until it is freed', async (t) => {
  const store = new MemoryStore();
  const mirror = new StoreMirror(store, logger('test-mirror'), 20);
  t.teardown(() => mirror.close());
  mirror.put(sampleChunk('aa01', 0));
  mirror.put(sampleChunk('bb02', 0));
  mirror.remove('aa01', 0); // consumed at once: the hot path
  await waitUntil('bb02 written', () => store.getChunk('bb02', 0));
  t.is(await store.getChunk('aa01', 0), undefined);
  t.deepEqual([mirror.written, mirror.skipped], [1, 1]);
  mirror.remove('bb02', 0);
  await waitUntil('bb02 deleted', async () => (await store.getChunk('bb02', 0)) === undefined);
  t.pass();
});

test('without a delay every entry is written at once', async (t) => {
  const store = new MemoryStore();
  const mirror = new StoreMirror(store, logger('test-mirror'));
  mirror.put(sampleChunk('aa01', 0));
  await mirror.close();
  t.deepEqual(await store.getChunk('aa01', 0), sampleChunk('aa01', 0));
});
