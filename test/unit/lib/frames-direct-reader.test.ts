/** DirectFrameReader over a real TCP socket: payloads are read by the kernel straight into their targets. */
import test from 'ava';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { DirectFrameReader, type DirectReadOptions } from '../../../lib/frames-direct-reader.js';
import { writeFrame, type PayloadTarget } from '../../../lib/frames.js';
import { waitUntil } from '../../../lib/wait.js';

interface Got { header: { n: number }; payload: Buffer | null }

/**
 * A writer (the accepting side) and a reader (the dialing side, with onread). `target` picks each payload's
 * place; every buffer the socket was asked to read into is recorded.
 */
async function link(
  t: { teardown(fn: () => void): void },
  target: (h: { n: number }, len: number) => PayloadTarget | Promise<PayloadTarget>,
  opts: DirectReadOptions & { lowWaterOf?: (sock: Socket, bytes: number) => void } = {},
) {
  const got: Got[] = [];
  const errors: Error[] = [];
  const reads: Uint8Array[] = [];
  const lowWater: number[] = []; // every low-water mark the reader asked for
  let bytesRead = 0;
  const server: Server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<Socket>((r) => server.once('connection', r));
  const reader = new DirectFrameReader<{ n: number }>(
    { target, frame: (header, payload) => got.push({ header, payload }), error: (e) => errors.push(e) },
    opts.lowWater || opts.lowWaterOf ? { lowWater: (b) => { lowWater.push(b); opts.lowWater?.(b); opts.lowWaterOf?.(sock, b); } } : {},
  );
  const onread = {
    buffer: () => { const b = reader.onread.buffer(); reads.push(b); return b; },
    callback: (n: number, b: Uint8Array) => { bytesRead += n; return reader.onread.callback(n, b); },
  };
  const sock = connect({ port: (server.address() as { port: number }).port, host: '127.0.0.1', onread });
  reader.attach(sock);
  const writer = await accepted;
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  t.teardown(() => { sock.destroy(); writer.destroy(); server.close(); });
  return { writer, got, errors, reads, closed, lowWater, bytesRead: () => bytesRead };
}

const until = (what: string, ok: () => boolean) => waitUntil(what, ok, { timeoutMs: 20_000, intervalMs: 5 });

test('a large payload is read into its target and nowhere else', async (t) => {
  const target = Buffer.alloc(3 * 1024 * 1024);
  const { writer, got, reads } = await link(t, () => target);
  const payload = randomBytes(target.length);
  writeFrame(writer, { n: 1 }, payload);
  await until('frame', () => got.length === 1);
  t.true(target.equals(payload));
  t.is(got[0]!.payload, target);
  const intoTarget = reads.filter((b) => b.buffer === target.buffer);
  t.true(intoTarget.length > 0);
  t.is(reads.filter((b) => b.byteLength > 64 * 1024 && b.buffer !== target.buffer).length, 0, 'no large read went anywhere else');
});

test('back-to-back frames each land in their own target', async (t) => {
  const targets = [Buffer.alloc(100_000), Buffer.alloc(10), Buffer.alloc(300_000)];
  const { writer, got } = await link(t, (h) => targets[h.n]!);
  const payloads = targets.map((b) => randomBytes(b.length));
  payloads.forEach((p, n) => writeFrame(writer, { n }, p));
  await until('frames', () => got.length === 3);
  t.deepEqual(got.map((g) => g.header.n), [0, 1, 2]);
  payloads.forEach((p, n) => t.true(targets[n]!.equals(p), `frame ${n}`));
});

test('while a target is pending reading stops, and the bytes arrive intact once it is given', async (t) => {
  const target = Buffer.alloc(500_000);
  let give: ((b: Buffer) => void) | undefined;
  const { writer, got, reads } = await link(t, (h) => (h.n === 0 ? new Promise<Buffer>((r) => { give = r; }) : Buffer.alloc(4)));
  const payload = randomBytes(target.length);
  writeFrame(writer, { n: 0 }, payload);
  writeFrame(writer, { n: 1 }, Buffer.from('next'));
  await until('the target asked for', () => give !== undefined);
  const readsWhileWaiting = reads.length;
  await new Promise((r) => setTimeout(r, 50));
  t.is(reads.length, readsWhileWaiting, 'no read while the target is pending');
  t.is(got.length, 0);
  give!(target);
  await until('frames', () => got.length === 2);
  t.true(target.equals(payload));
  t.is(got[1]!.payload!.toString(), 'next');
});

test('a discarded payload is skipped and the next frame still parses', async (t) => {
  const { writer, got } = await link(t, (h) => (h.n === 0 ? null : undefined));
  writeFrame(writer, { n: 0 }, randomBytes(1_000_000));
  writeFrame(writer, { n: 1 }, Buffer.from('kept'));
  await until('frames', () => got.length === 2);
  t.is(got[0]!.payload, null);
  t.is(got[1]!.payload!.toString(), 'kept');
});

test('a malformed header drops the connection with an error', async (t) => {
  const { writer, errors, closed } = await link(t, () => undefined);
  const bad = Buffer.alloc(8 + 3);
  bad.writeUInt32LE(3, 0);
  bad.write('{x}', 8);
  writer.write(bad);
  await closed;
  t.regex(errors[0]!.message, /malformed frame header/);
});

test('several small frames coalesced in one write are parsed from one staged read, not read part by part', async (t) => {
  const { writer, got, reads } = await link(t, () => undefined);
  const n = 50;
  const payloads = Array.from({ length: n }, (_, i) => randomBytes(100 + i));
  writer.cork(); // one write: the frames come in as one stream of bytes
  payloads.forEach((p, i) => writeFrame(writer, { n: i }, p));
  process.nextTick(() => writer.uncork());
  await until('frames', () => got.length === n);
  t.deepEqual(got.map((g) => g.header.n), payloads.map((_, i) => i));
  payloads.forEach((p, i) => t.true(got[i]!.payload!.equals(p), `frame ${i}`));
  // Read part by part (prefix, header, payload), 50 frames take 150 reads; staged, a handful (however TCP cuts them).
  t.true(reads.length < n, `${reads.length} reads for ${n} frames`);
});

test('frames split across reads at every byte arrive whole, small ones and one read straight into its target', async (t) => {
  const big = Buffer.alloc(40_000);
  const { writer, got } = await link(t, (h) => (h.n === 1 ? big : undefined));
  const payloads = [randomBytes(10), randomBytes(big.length), randomBytes(3000)];
  const bytes: Buffer[] = [];
  const capture = { write: (b: Buffer) => { bytes.push(Buffer.from(b)); return true; }, cork() {}, uncork() {} };
  payloads.forEach((p, n) => writeFrame(capture as never, { n }, p));
  const stream = Buffer.concat(bytes);
  for (let i = 0; i < stream.length;) { // a few bytes per write, so the reader sees every part cut somewhere
    const k = i < 200 ? 1 : 997;
    writer.write(stream.subarray(i, i + k));
    i += k;
    if (i < 200) await new Promise((r) => setImmediate(r));
  }
  await until('frames', () => got.length === 3);
  t.deepEqual(got.map((g) => g.header.n), [0, 1, 2]);
  t.true(got[0]!.payload!.equals(payloads[0]!));
  t.is(got[1]!.payload, big);
  t.true(big.equals(payloads[1]!));
  t.true(got[2]!.payload!.equals(payloads[2]!));
});

/** The bytes of one frame as writeFrame puts them on the wire. */
function frameBytes(header: { n: number }, payload: Buffer): Buffer {
  const parts: Buffer[] = [];
  const capture = { write: (b: Buffer) => { parts.push(Buffer.from(b)); return true; }, cork() {}, uncork() {} };
  writeFrame(capture as never, header, payload);
  return Buffer.concat(parts);
}

test('a payload rest not yet queued is waited for with a low-water mark of its size, which goes back to 1 once it is in', async (t) => {
  const target = Buffer.alloc(1024 * 1024);
  const { writer, got, lowWater, bytesRead } = await link(t, () => target, { lowWater: () => {} });
  const payload = randomBytes(target.length);
  const stream = frameBytes({ n: 0 }, payload);
  const first = stream.length - payload.length + 100_000; // prefix, header and the first 100 000 payload bytes
  writer.write(stream.subarray(0, first));
  await until('the first part read', () => bytesRead() === first);
  t.is(lowWater.at(-1), payload.length - 100_000, 'the mark: the rest of the payload');
  writer.write(stream.subarray(first));
  await until('frame', () => got.length === 1);
  t.true(target.equals(payload));
  t.is(lowWater.at(-1), 1, 'back to 1 for the next frame');
});

test('after a payload read straight into its target, the next staging read is short (little of the next payload is copied twice)', async (t) => {
  const targets = [Buffer.alloc(300_000), Buffer.alloc(300_000)];
  const { writer, got, reads } = await link(t, (h) => targets[h.n]!);
  writer.write(Buffer.concat(targets.map((b, n) => frameBytes({ n }, randomBytes(b.length)))));
  await until('frames', () => got.length === 2);
  const lastIntoFirst = reads.map((b) => b.buffer === targets[0]!.buffer).lastIndexOf(true);
  t.true(lastIntoFirst >= 0);
  t.true(reads[lastIntoFirst + 1]!.byteLength <= 4096, `${reads[lastIntoFirst + 1]!.byteLength} bytes`);
});

test('a rest larger than 1 MiB is waited for in parts of 1 MiB (the receiver keeps copying while the sender writes)', async (t) => {
  const target = Buffer.alloc(3 * 1024 * 1024);
  const { writer, got, lowWater, bytesRead } = await link(t, () => target, { lowWater: () => {} });
  const payload = randomBytes(target.length);
  const stream = frameBytes({ n: 0 }, payload);
  const first = stream.length - payload.length + 100_000;
  writer.write(stream.subarray(0, first));
  await until('the first part read', () => bytesRead() === first);
  t.is(lowWater.at(-1), 1024 * 1024);
  writer.write(stream.subarray(first));
  await until('frame', () => got.length === 1);
  t.true(target.equals(payload));
  t.is(lowWater.at(-1), 1);
});
