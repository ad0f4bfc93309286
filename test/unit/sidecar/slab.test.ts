import test from 'ava';
import { Slab } from '../../../sidecar/shm/slab.js';

test('allocates contiguous runs first-fit and reuses freed space', (t) => {
  const s = new Slab(0, 64, 10);
  const a = s.alloc(4);
  const b = s.alloc(4);
  t.deepEqual([a, b], [0, 4]);
  s.release(a, 4);
  t.is(s.alloc(3), 0);
});

test('coalesces neighbouring free extents so a full-size run fits again', (t) => {
  const s = new Slab(0, 64, 9);
  const xs = [s.alloc(3), s.alloc(3), s.alloc(3)];
  t.is(s.alloc(1), -1);
  s.release(xs[0]!, 3);
  s.release(xs[2]!, 3);
  s.release(xs[1]!, 3);
  t.is(s.freeExtents, 1);
  t.is(s.alloc(9), 0);
});

test('refuses a double free', (t) => {
  const s = new Slab(0, 64, 4);
  const a = s.alloc(2);
  s.release(a, 2);
  t.throws(() => s.release(a, 2), { message: /double free/ });
});

test('counts bytes in use in whole slots', (t) => {
  const s = new Slab(0, 128, 8);
  s.alloc(s.slotsFor(129));
  t.is(s.bytesInUse, 256);
});
