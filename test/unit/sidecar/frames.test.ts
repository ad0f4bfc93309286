/** FrameReader (the unix-socket side): frames are read whole whatever pieces the stream delivers them in. */
import test from 'ava';
import { PassThrough } from 'node:stream';
import type { Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { FrameReader, writeFrame } from '../../../sidecar/wire/frames.js';

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
