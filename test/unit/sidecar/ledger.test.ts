/** When the ledger frees a chunk held for local consumer groups (markDone, connected ranks, pushes). */
import test from 'ava';
import { Ledger, type ChunkRecord, type FreeReason } from '../../../sidecar/server/ledger.js';

/** A ledger whose connected ranks are `live`, recording what it frees. */
function ledger(live: number[]) {
  const connected = new Set(live);
  const freed: Array<[string, FreeReason]> = [];
  const l = new Ledger({ free: (rec, reason) => freed.push([`${rec.id}/${rec.chunk}`, reason]), live: (r) => connected.has(r) }, 60_000);
  return { l, freed, connected };
}

let n = 0;
const chunk = (groups: number[][], pushes = 0): ChunkRecord => ({
  id: `id-${++n}`, chunk: 0, kind: 'json', size: 8, alloc: { slab: 0, start: 0, count: 1, offset: 0, length: 8, reserved: 4096 },
  producerRank: 9, groups, doneRanks: new Set(), pushes, expiresAt: Date.now() + 60_000, handedOut: false,
});

test('a chunk waits until every connected rank of its group marked it done', (t) => {
  const { l, freed } = ledger([2, 3]);
  const rec = chunk([[2, 3]]);
  l.add(rec, 1);
  l.done(rec.id, 0, 2, false);
  t.deepEqual(freed, []);
  l.done(rec.id, 0, 3, false);
  t.deepEqual(freed, [[`${rec.id}/0`, 'done']]);
});

test('a rank of the group without a connected client is not waited for once a group-mate marked it done', (t) => {
  const { l, freed } = ledger([2]);
  const rec = chunk([[2, 3]]);
  l.add(rec, 1);
  l.done(rec.id, 0, 2, false);
  t.deepEqual(freed, [[`${rec.id}/0`, 'done']]);
});

test('a chunk no rank marked done is kept even when its group has no connected client', (t) => {
  const { l, freed } = ledger([]);
  const rec = chunk([[2, 3]]);
  l.add(rec, 1);
  l.rankGone(2);
  t.deepEqual(freed, []);
});

test('a group-mate disconnecting frees a chunk the other rank already marked done', (t) => {
  const { l, freed, connected } = ledger([2, 3]);
  const rec = chunk([[2, 3]]);
  l.add(rec, 1);
  l.done(rec.id, 0, 2, false);
  connected.delete(3);
  l.rankGone(3);
  t.deepEqual(freed, [[`${rec.id}/0`, 'done']]);
});

test('markDone with group: true frees the chunk for the whole group even when every rank is connected', (t) => {
  const { l, freed } = ledger([2, 3]);
  const rec = chunk([[2, 3]]);
  l.add(rec, 1);
  l.done(rec.id, 0, 3, true);
  t.deepEqual(freed, [[`${rec.id}/0`, 'done']]);
});

test('every destination group must be done, each on its own', (t) => {
  const { l, freed } = ledger([1]);
  const rec = chunk([[1], [4, 5]]);
  l.add(rec, 1);
  l.done(rec.id, 0, 1, false);
  t.deepEqual(freed, [], 'group [4, 5] has not started: nobody read it there');
  l.done(rec.id, 0, 4, false);
  t.deepEqual(freed, [[`${rec.id}/0`, 'done']]);
});

test('a chunk is kept until its pushes to other nodes are written', (t) => {
  const { l, freed } = ledger([1]);
  const rec = chunk([[1]], 1);
  l.add(rec, 1);
  l.done(rec.id, 0, 1, false);
  t.deepEqual(freed, []);
  l.pushed(rec);
  t.deepEqual(freed, [[`${rec.id}/0`, 'done']]);
});
