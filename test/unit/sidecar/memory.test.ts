import test from 'ava';
import { existsSync } from 'node:fs';
import { SharedMemory } from '../../../sidecar/shm/memory.js';
import { SidecarError } from '../../../sidecar/errors.js';

const mem = (t: { teardown(fn: () => void): void }, slots = 4) => {
  const m = new SharedMemory(`unit-${process.pid}`, [{ slotBytes: 4096, slots }]);
  t.teardown(() => m.close());
  return m;
};

test('an allocation under memory pressure waits until memory is freed', async (t) => {
  const m = mem(t);
  const a = await m.alloc(4 * 4096, { deadline: Date.now() + 5000 });
  const waiting = m.alloc(4096, { deadline: Date.now() + 5000 });
  t.is(m.waiting, 1);
  m.free(a);
  const b = await waiting;
  t.is(b.offset, 0);
});

test('an allocation that cannot get memory fails at its deadline with SIDECAR_TIMEOUT', async (t) => {
  const m = mem(t);
  await m.alloc(4 * 4096, { deadline: Date.now() + 5000 });
  const err = await t.throwsAsync(m.alloc(1, { deadline: Date.now() + 50 }));
  t.is((err as SidecarError).code, 'SIDECAR_TIMEOUT');
  t.is(m.waiting, 0);
});

test('an allocation whose deadline lies beyond the timer range (30 days) waits for memory', async (t) => {
  const m = mem(t);
  const a = await m.alloc(4 * 4096, { deadline: Date.now() + 5000 });
  const waiting = m.alloc(4096, { deadline: Date.now() + 30 * 24 * 3600_000 });
  await new Promise((r) => setTimeout(r, 50));
  t.is(m.waiting, 1, 'still waiting, not timed out');
  m.free(a);
  t.is((await waiting).offset, 0);
});

test('data larger than every slab fails at once with SIDECAR_TOO_LARGE', async (t) => {
  const m = mem(t);
  const err = await t.throwsAsync(m.alloc(5 * 4096, { deadline: Date.now() + 60_000 }));
  t.is((err as SidecarError).code, 'SIDECAR_TOO_LARGE');
});

test('trimming an allocation keeps its first slots and frees the rest', async (t) => {
  const m = mem(t);
  const a = await m.alloc(4 * 4096, { deadline: Date.now() + 1000 });
  const b = m.trim(a, 4096 + 1);
  t.is(b.offset, a.offset);
  t.is(b.reserved, 2 * 4096);
  t.is(m.bytesInUse, 2 * 4096);
  t.is((await m.alloc(2 * 4096, { deadline: Date.now() + 1000 })).offset, 2 * 4096);
});

test('a view writes through to the shared segment', async (t) => {
  const m = mem(t);
  const a = await m.alloc(3, { deadline: Date.now() + 1000 });
  m.view(a).set([7, 8, 9]);
  t.deepEqual([...m.segment.bytes.subarray(a.offset, a.offset + 3)], [7, 8, 9]);
});

test('closing unlinks the segment file', (t) => {
  const m = new SharedMemory(`unit-${process.pid}`, [{ slotBytes: 4096, slots: 1 }]);
  t.true(existsSync(m.segment.path));
  m.close();
  t.false(existsSync(m.segment.path));
});
