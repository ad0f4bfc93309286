/** The ledger stays compact: consumed ids leave only tombstones, dropped by generation; expiry runs off a wheel. */
import test from 'ava';
import { SidecarError } from '../../../sidecar/errors.js';
import { Ledger, type ChunkRecord, type FreeReason } from '../../../sidecar/server/ledger.js';

const TTL = 60_000;

/** A ledger on a clock the test moves, with ranks `live` connected, recording what it frees. */
function ledger(live: number[] = [1]) {
  const clock = { now: 1_000_000 };
  const freed: Array<[string, FreeReason]> = [];
  const l = new Ledger({ free: (rec, reason) => freed.push([`${rec.id}/${rec.chunk}`, reason]), live: (r) => live.includes(r) }, TTL,
    { clock: () => clock.now });
  return { l, freed, clock };
}

const record = (id: string, expiresAt: number, o: { chunk?: number; groups?: number[][]; pushes?: number } = {}): ChunkRecord => ({
  id, chunk: o.chunk ?? 0, kind: 'json', size: 8, alloc: { slab: 0, start: 0, count: 1, offset: 0, length: 8, reserved: 4096 },
  producerRank: 9, groups: o.groups ?? [[1]], doneRanks: new Set(), pushes: o.pushes ?? 0, expiresAt, handedOut: false,
});

const code = async (p: Promise<unknown>) => {
  try { await p; return 'resolved'; } catch (err) { return (err as SidecarError).code; }
};

test('200 000 consumed ids leave no live entry, only tombstones', async (t) => {
  const { l, clock } = ledger();
  const N = 200_000;
  for (let i = 0; i < N; i++) {
    const id = `id-${i}`;
    l.add(record(id, clock.now + TTL), 1);
    await l.recv(id, 0, 1, clock.now + 1000);
    l.done(id, 0, 1, false);
  }
  t.deepEqual(l.stats(), { liveIds: 0, chunks: 0, waiting: 0, tombstones: N, generations: 1 });
});

test('tombstones are dropped once the ttl has passed, and not before', async (t) => {
  const { l, clock } = ledger();
  const t0 = clock.now;
  for (let i = 0; i < 1000; i++) { l.add(record(`id-${i}`, t0 + TTL), 1); l.done(`id-${i}`, 0, 1, false); }
  clock.now = t0 + TTL / 4;
  l.sweep(clock.now); // closes the generation holding them
  clock.now = t0 + TTL / 4 + TTL - 1;
  l.sweep(clock.now);
  t.is(l.stats().tombstones, 1000);
  t.is(await code(l.recv('id-7', 0, 1, clock.now + 1000)), 'SIDECAR_ALREADY_CONSUMED');
  clock.now = t0 + TTL / 4 + TTL;
  l.sweep(clock.now);
  t.is(l.stats().tombstones, 0);
  t.is(l.add(record('id-7', clock.now + TTL), 1), 'added', 'a forgotten id is new again');
});

test('a late second send of a consumed id is a duplicate, and a late rank gets SIDECAR_ALREADY_CONSUMED', async (t) => {
  const { l, clock } = ledger([2, 3, 4]);
  const rec = record('x', clock.now + TTL, { groups: [[2, 3]] });
  l.add(rec, 1);
  t.is(await l.recv('x', 0, 2, clock.now + 1000), rec);
  t.is(await l.recv('x', 0, 3, clock.now + 1000), rec, 'every rank of the group may recv the same chunk');
  l.done('x', 0, 2, false);
  l.done('x', 0, 3, false);
  t.is(l.stats().liveIds, 0);
  t.is(l.add(record('x', clock.now + TTL, { groups: [[2, 3]] }), 1), 'duplicate');
  t.is(await code(l.recv('x', 0, 4, clock.now + 1000)), 'SIDECAR_ALREADY_CONSUMED');
  t.is(await l.recv('x', 1, 4, clock.now + 1000), null, 'past the last chunk');
  t.notThrows(() => l.done('x', 0, 3, false), 'markDone stays idempotent');
});

test('a waiting recv is woken by the chunk, and the id becomes a tombstone once consumed', async (t) => {
  const { l, clock } = ledger();
  const got = l.recv('w', 0, 1, clock.now + 1000);
  t.is(l.stats().waiting, 1);
  const rec = record('w', clock.now + TTL);
  l.add(rec, 1);
  t.is(await got, rec);
  l.done('w', 0, 1, false);
  t.like(l.stats(), { liveIds: 0, waiting: 0, tombstones: 1 });
});

test('an unconsumed chunk expires at its expiry on the next sweep, and later recvs get SIDECAR_EXPIRED', async (t) => {
  const { l, freed, clock } = ledger();
  const t0 = clock.now;
  l.add(record('e', t0 + 100), 1);
  l.add(record('keep', t0 + 5000), 1);
  t.deepEqual(l.sweep(t0 + 99), []);
  t.deepEqual(l.sweep(t0 + 100).map((r) => r.id), ['e']);
  t.deepEqual(freed, [['e/0', 'expired']]);
  t.is(await code(l.recv('e', 0, 1, t0 + 1000)), 'SIDECAR_EXPIRED');
  t.like(l.stats(), { liveIds: 1, chunks: 1, tombstones: 1 });
});

test('a chunk past its expiry is kept while its push is in flight and expires on the sweep after it', (t) => {
  const { l, freed, clock } = ledger();
  const rec = record('p', clock.now + 100, { pushes: 1 });
  l.add(rec, 1);
  t.deepEqual(l.sweep(clock.now + 500), []);
  l.pushed(rec);
  t.deepEqual(freed, [], 'rank 1 has not read it');
  t.deepEqual(l.sweep(clock.now + 600).map((r) => r.id), ['p']);
});

test('a failed id keeps failing sends and recvs after it became idle', async (t) => {
  const { l, clock } = ledger();
  const waiting = l.recv('f', 0, 1, clock.now + 1000);
  l.fail('f', new SidecarError('SIDECAR_PRODUCER_FAILED', 'f: boom'));
  t.is(await code(waiting), 'SIDECAR_PRODUCER_FAILED');
  t.like(l.stats(), { liveIds: 0, waiting: 0, tombstones: 1 });
  t.true(l.isFailed('f'));
  t.is(l.add(record('f', clock.now + TTL), 1), 'failed');
  t.is(await code(l.recv('f', 0, 1, clock.now + 1000)), 'SIDECAR_PRODUCER_FAILED');
});

test('a stream whose chunks were consumed before its close still ends at the close', async (t) => {
  const { l, clock } = ledger();
  l.add(record('s', clock.now + TTL));
  l.done('s', 0, 1, false);
  t.is(l.stats().liveIds, 0);
  const next = l.recv('s', 1, 1, clock.now + 1000);
  l.setNumChunks('s', 1);
  t.is(await next, null);
  t.is(await code(l.recv('s', 0, 1, clock.now + 1000)), 'SIDECAR_ALREADY_CONSUMED');
  t.like(l.stats(), { liveIds: 0, tombstones: 1 });
});
