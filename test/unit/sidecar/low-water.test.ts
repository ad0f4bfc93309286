/** The sidecar addon's receive low-water mark on a real peer-style link (DirectFrameReader over TCP). */
import test from 'ava';
import { connect, createServer, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { DirectFrameReader } from '../../../lib/frames-direct-reader.js';
import { writeFrame } from '../../../lib/frames.js';
import { receiveLowWaterSetter } from '../../../sidecar/shm/native.js';
import { waitUntil } from '../../../lib/wait.js';

test('with the kernel mark set, a payload sent in two parts and the small frame after it both arrive intact', async (t) => {
  const setLowWater = receiveLowWaterSetter();
  t.truthy(setLowWater, 'the addon built from this tree sets the mark');
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const target = Buffer.alloc(1024 * 1024);
  const got: Buffer[] = [];
  const marks: number[] = [];
  const reader = new DirectFrameReader<{ n: number }>(
    { target: (h) => (h.n === 0 ? target : undefined), frame: (_h, p) => got.push(p!), error: (e) => t.fail(e.message) },
    { lowWater: (b) => { marks.push(b); setLowWater!(sock, b); } },
  );
  const sock = connect({ port: (server.address() as { port: number }).port, host: '127.0.0.1', onread: reader.onread });
  reader.attach(sock);
  const writer = await accepted;
  t.teardown(() => { sock.destroy(); writer.destroy(); server.close(); });

  const payload = randomBytes(target.length);
  const parts: Buffer[] = [];
  writeFrame({ write: (b: Buffer) => { parts.push(Buffer.from(b)); return true; }, cork() {}, uncork() {} } as never, { n: 0 }, payload);
  const stream = Buffer.concat(parts);
  const first = stream.length - payload.length + 200_000;
  writer.write(stream.subarray(0, first));
  // The reader asks to be woken once the whole rest is queued (bytes of the first part still in flight wait with it).
  await waitUntil('a mark set', () => (marks.at(-1) ?? 1) > 1, { timeoutMs: 20_000, intervalMs: 5 });
  t.true(marks.at(-1)! >= payload.length - 200_000, `mark ${marks.at(-1)}`);
  writer.write(stream.subarray(first));
  writeFrame(writer, { n: 1 }, Buffer.from('after')); // stuck behind a mark left high, it would never be read
  await waitUntil('both frames', () => got.length === 2, { timeoutMs: 20_000, intervalMs: 5 });
  t.true(target.equals(payload));
  t.is(got[1]!.toString(), 'after');
  t.is(marks.at(-1), 1);
});
