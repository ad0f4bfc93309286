import test from 'ava';
import { KvCache } from '../../../../policies/kv-cache.js';

const geo = { layers: 2, heads: 2, headDim: 4, maxPositions: 1000, granule: 16 };

/** A present tensor [batch=1, heads, seq, headDim] whose values encode (layer, head, position, dim). */
function present(layer: number, seq: number, base: number): Float32Array {
  const out = new Float32Array(geo.heads * seq * geo.headDim);
  for (let h = 0; h < geo.heads; h++) for (let s = 0; s < seq; s++) for (let d = 0; d < geo.headDim; d++) {
    out[(h * seq + s) * geo.headDim + d] = layer * 1e6 + h * 1e4 + (base + s) * 10 + d;
  }
  return out;
}

function read(cache: KvCache, layer: number, slot: number, head: number, pos: number): number[] {
  const { keys } = cache.past(slot + 1);
  const off = ((slot * geo.heads + head) * cache.capacity + pos) * geo.headDim;
  return [...keys[layer]!.subarray(off, off + geo.headDim)];
}

function fill(cache: KvCache, slot: number, len: number): void {
  const ks = [0, 1].map((l) => present(l, len, slot * 100));
  cache.write(slot, 0, ks, ks, 0, len, len);
}

test('capacity is rounded up to the granule', (t) => {
  const c = new KvCache(geo);
  c.reserve(2, 17, []);
  t.is(c.capacity, 32);
  t.is(c.slots, 2);
});

test('growing keeps the live positions of every live slot', (t) => {
  const c = new KvCache(geo);
  c.reserve(2, 10, []);
  fill(c, 0, 10);
  fill(c, 1, 7);
  c.reserve(5, 200, [{ slot: 0, len: 10 }, { slot: 1, len: 7 }]);
  t.true(c.capacity >= 200);
  t.deepEqual(read(c, 1, 1, 1, 6), [1e6 + 1e4 + 1060, 1e6 + 1e4 + 1061, 1e6 + 1e4 + 1062, 1e6 + 1e4 + 1063]);
  t.deepEqual(read(c, 0, 0, 0, 9), [90, 91, 92, 93]);
});

test('shrinking after long sequences left keeps the short ones', (t) => {
  const c = new KvCache(geo);
  c.reserve(1, 500, []);
  fill(c, 0, 5);
  c.reserve(1, 6, [{ slot: 0, len: 5 }]);
  t.true(c.capacity < 500);
  t.deepEqual(read(c, 0, 0, 1, 4), [1e4 + 40, 1e4 + 41, 1e4 + 42, 1e4 + 43]);
});

test('move copies a slot into another slot', (t) => {
  const c = new KvCache(geo);
  c.reserve(3, 8, []);
  fill(c, 2, 8);
  c.move(2, 0, 8);
  t.deepEqual(read(c, 1, 0, 0, 3), read(c, 1, 2, 0, 3));
});

test('write places positions after the existing ones', (t) => {
  const c = new KvCache(geo);
  c.reserve(1, 16, []);
  fill(c, 0, 3);
  const k = [0, 1].map((l) => present(l, 1, 3));
  c.write(0, 3, k, k, 0, 1, 1);
  t.deepEqual(read(c, 0, 0, 1, 3), [1e4 + 30, 1e4 + 31, 1e4 + 32, 1e4 + 33]);
});

test('writing past the capacity is refused', (t) => {
  const c = new KvCache(geo);
  c.reserve(1, 16, []);
  const k = [0, 1].map((l) => present(l, 1, 0));
  t.throws(() => c.write(0, 16, k, k, 0, 1, 1), { instanceOf: RangeError });
});
