/** The chunk finder asks the Store only for recvs that keep waiting, and keeps asking while they wait. */
import test from 'ava';
import { MemoryStore } from '../../../control/store/memory.js';
import type { TensorChunkMeta } from '../../../lib/store.js';
import { ChunkFinder } from '../../../sidecar/server/finder.js';
import { waitUntil } from '../../../lib/wait.js';
import { sampleChunk } from '../../helpers/store-records.js';

function finderOn(store: MemoryStore, waiting: Set<string>) {
  const found: Array<{ meta: TensorChunkMeta; again: boolean }> = [];
  const looked: string[] = [];
  const finder = new ChunkFinder({
    lookup: (id, chunk) => { looked.push(id); return store.getChunk(id, chunk); },
    waiting: (id, chunk) => waiting.has(`${id}:${chunk}`),
    found: (meta, again) => void found.push({ meta, again }),
    failed: () => {},
  }, { firstDelayMs: 10, maxDelayMs: 40 });
  return { finder, found, looked };
}

test('a recv that stopped waiting before the first delay costs no store lookup', async (t) => {
  const store = new MemoryStore();
  await store.putChunk(sampleChunk('aa01', 0, { node: 'n0' }));
  await store.putChunk(sampleChunk('bb02', 0, { node: 'n0' }));
  const waiting = new Set(['aa01:0', 'bb02:0']);
  const { finder, found, looked } = finderOn(store, waiting);
  t.teardown(() => finder.stop());
  finder.wanted('aa01', 0);
  waiting.delete('aa01:0'); // answered (the chunk arrived by push)
  finder.wanted('bb02', 0);
  await waitUntil('bb02 found', () => found.length > 0);
  t.deepEqual([...new Set(found.map((f) => f.meta.id))], ['bb02']);
  t.false(looked.includes('aa01'));
});

test('a chunk not in the store yet is looked up again until its entry appears, then reported again while the recv waits', async (t) => {
  const store = new MemoryStore();
  const waiting = new Set(['cc03:1']);
  const { finder, found } = finderOn(store, waiting);
  t.teardown(() => finder.stop());
  finder.wanted('cc03', 1);
  await waitUntil('two lookups', () => finder.lookups >= 2);
  t.deepEqual(found, []);
  await store.putChunk(sampleChunk('cc03', 1, { node: 'n2' }));
  await waitUntil('found twice', () => found.length >= 2);
  t.deepEqual(found.slice(0, 2).map((f) => [f.meta.node, f.again]), [['n2', false], ['n2', true]]);
});
