import test from 'ava';
import { ShmRing } from '../../../../executors/common/shm-ring.js';

const bytes = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

test('a message larger than the ring arrives intact', async (t) => {
  const ring = ShmRing.create(64);
  const big = bytes(10_000);
  const [, parts] = await Promise.all([ring.write([big, bytes(3, 7)]), ring.read()]);
  t.deepEqual(parts.map((p) => p.length), [10_000, 3]);
  t.deepEqual(parts[0], big);
  t.deepEqual(parts[1], bytes(3, 7));
});

test('parts come out 8-byte aligned, so typed views need no copy', async (t) => {
  const ring = ShmRing.create(1024);
  await ring.write([bytes(5), new Uint8Array(new Float64Array([1.5, 2.5]).buffer)]);
  const parts = await ring.read();
  t.is(parts[1]!.byteOffset % 8, 0);
  t.deepEqual([...new Float64Array(parts[1]!.buffer, parts[1]!.byteOffset, 2)], [1.5, 2.5]);
});

test('messages keep their order', async (t) => {
  const ring = ShmRing.create(128);
  const writes = Promise.all([1, 2, 3, 4, 5].map((n) => ring.write([bytes(n * 40, n)])));
  const got: number[] = [];
  for (let i = 0; i < 5; i++) got.push((await ring.read())[0]!.length);
  await writes;
  t.deepEqual(got, [40, 80, 120, 160, 200]);
});

test('positions survive the byte counters wrapping at 2^32', async (t) => {
  const ring = ShmRing.create(64);
  const ctrl = new Int32Array(ring.sab, 0, 2);
  ctrl[0] = -20; // 20 bytes before 2^32
  ctrl[1] = -20;
  const msg = bytes(300, 5);
  const [, parts] = await Promise.all([ring.write([msg]), ring.read()]);
  t.deepEqual(parts[0], msg);
  t.is(ring.pending, 0);
});

test('close wakes a waiting reader with EXECUTOR_CHANNEL_CLOSED', async (t) => {
  const ring = ShmRing.create(64);
  const reading = ring.read();
  setTimeout(() => ring.close(), 20);
  const err = await t.throwsAsync(reading);
  t.is((err as { code?: string }).code, 'EXECUTOR_CHANNEL_CLOSED');
});

test('a ring is attached from its SharedArrayBuffer', async (t) => {
  const a = ShmRing.create(256);
  const b = ShmRing.attach(a.sab);
  await a.write([bytes(17)]);
  t.deepEqual((await b.read())[0], bytes(17));
});

test('the capacity must be a power of two', (t) => {
  t.throws(() => ShmRing.create(100), { instanceOf: RangeError });
});
