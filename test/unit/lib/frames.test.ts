/** FrameReader (the unix-socket side): frames are read whole whatever pieces the stream delivers them in. */
import test from 'ava';
import { PassThrough } from 'node:stream';
import type { Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { FrameReader, flushFrames, writeFrame } from '../../../lib/frames.js';

/** The bytes writeFrame puts on a stream for each [header, payload]. */
function encode(frames: Array<[object, Buffer | undefined]>): Buffer {
  const out: Buffer[] = [];
  const sink = new PassThrough();
  sink.on('data', (b: Buffer) => out.push(b));
  for (const [h, p] of frames) writeFrame(sink as unknown as Socket, h, p);
  sink.uncork(); // writeFrame holds writes until the end of the tick
  return Buffer.concat(out);
}

const FRAMES: Array<[object, Buffer | undefined]> = [
  [{ n: 0, op: 'put' }, randomBytes(100_000)],
  [{ n: 1, op: 'done' }, undefined],
  [{ n: 2, text: 'héllo ✓' }, randomBytes(13)],
];

for (const piece of [1, 3, 8, 100, 4096, 70_000]) {
  test(`frames delivered in pieces of ${piece} bytes arrive whole and in order`, async (t) => {
    const bytes = encode(FRAMES);
    const stream = new PassThrough();
    const got: Array<[unknown, Buffer | null]> = [];
    new FrameReader<object>(stream as unknown as Socket, { target: () => undefined, frame: (h, p) => got.push([h, p]), error: (e) => t.fail(e.message) });
    for (let i = 0; i < bytes.length; i += piece) stream.write(bytes.subarray(i, i + piece));
    await new Promise((r) => setImmediate(r));
    t.deepEqual(got.map(([h]) => h), FRAMES.map(([h]) => h));
    FRAMES.forEach(([, p], i) => t.true((got[i]![1] ?? Buffer.alloc(0)).equals(p ?? Buffer.alloc(0)), `payload ${i}`));
  });
}

test('a payload goes into the target the handler gives', async (t) => {
  const target = Buffer.alloc(100_000);
  const stream = new PassThrough();
  const got: Array<Buffer | null> = [];
  new FrameReader<{ n: number }>(stream as unknown as Socket, { target: (h) => (h.n === 0 ? target : undefined), frame: (_h, p) => got.push(p), error: (e) => t.fail(e.message) });
  const bytes = encode(FRAMES);
  for (let i = 0; i < bytes.length; i += 1000) stream.write(bytes.subarray(i, i + 1000));
  await new Promise((r) => setImmediate(r));
  t.is(got[0], target);
  t.true(target.equals(FRAMES[0]![1]!));
});

/**
 * A sink that records what leaves it (written to the "kernel") and decodes it. The tests of when frames leave run
 * serially: `flushFrames()` releases the frames of every socket of the process, another test's too.
 */
function sink() {
  const out: Buffer[] = [];
  const s = new PassThrough();
  s.on('data', (b: Buffer) => out.push(b));
  const sent = () => {
    const got: unknown[] = [];
    const stream = new PassThrough();
    new FrameReader<object>(stream as unknown as Socket, { target: () => undefined, frame: (h) => got.push(h), error: () => {} });
    stream.write(Buffer.concat(out));
    return got;
  };
  return { sock: s as unknown as Socket, stream: s, sent };
}

test.serial('frames written in one tick are held until its end, then leave together', async (t) => {
  const { sock, stream } = sink();
  writeFrame(sock, { n: 0 });
  writeFrame(sock, { n: 1 });
  t.is(stream.writableCorked, 1, 'held');
  await new Promise((r) => process.nextTick(r));
  t.is(stream.writableCorked, 0);
  t.is(stream.writableLength, 0, 'written');
});

test.serial('flushFrames sends the frames held for the end of the tick at once, and later frames are held again', async (t) => {
  const { sock, stream, sent } = sink();
  writeFrame(sock, { n: 0 });
  writeFrame(sock, { n: 1 });
  flushFrames(sock);
  t.is(stream.writableCorked, 0, 'released before the end of the tick');
  t.is(stream.writableLength, 0, 'written');
  writeFrame(sock, { n: 2 });
  t.is(stream.writableCorked, 1, 'a frame after the flush is batched again');
  await new Promise((r) => setImmediate(r));
  t.is(stream.writableCorked, 0);
  t.deepEqual(sent(), [{ n: 0 }, { n: 1 }, { n: 2 }], 'in order');
});

test.serial('the end-of-tick release of flushed frames does not release a batch written after the flush early', async (t) => {
  const { sock, stream } = sink();
  writeFrame(sock, { n: 0 });
  flushFrames(sock);
  let heldInBetween: number | undefined;
  process.nextTick(() => { heldInBetween = stream.writableCorked; }); // runs after the first batch's release, before the second's
  writeFrame(sock, { n: 1 });
  await new Promise((r) => setImmediate(r));
  t.is(heldInBetween, 1, 'the second batch stays held until its own release');
  t.is(stream.writableCorked, 0);
});

test.serial('flushFrames with nothing held does nothing', (t) => {
  const { sock, stream } = sink();
  flushFrames(sock);
  t.is(stream.writableCorked, 0);
  t.is(stream.writableLength, 0);
});

test.serial('flushFrames() with no socket sends what every socket of the process holds', async (t) => {
  const a = sink();
  const b = sink();
  writeFrame(a.sock, { n: 0 });
  writeFrame(b.sock, { n: 1 });
  t.is(a.stream.writableCorked + b.stream.writableCorked, 2, 'both held');
  flushFrames();
  t.is(a.stream.writableCorked + b.stream.writableCorked, 0, 'both released');
  t.is(a.stream.writableLength + b.stream.writableLength, 0, 'both written');
  writeFrame(a.sock, { n: 2 });
  t.is(a.stream.writableCorked, 1, 'held again');
  await new Promise((r) => setImmediate(r));
  t.deepEqual(a.sent(), [{ n: 0 }, { n: 2 }]);
  t.deepEqual(b.sent(), [{ n: 1 }]);
});
