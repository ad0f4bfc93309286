/**
 * markDone without a round trip (protocol 3): a `done` that says `quiet` is answered only when it fails; a client sends
 * it only to a sidecar whose hello said 3 or more, and waits for the reply of an older sidecar as before.
 */
import test from 'ava';
import { connect, createServer, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSidecars, type SidecarCluster } from '../../helpers/sidecar.js';
import { waitUntil } from '../../../lib/wait.js';
import { FrameReader, writeFrame } from '../../../lib/frames.js';
import { QUIET_DONE_VERSION, WIRE_VERSION } from '../../../sidecar/wire/protocol.js';
import { SidecarClient } from '../../../sidecar/client/client.js';
import { createSegment } from '../../../sidecar/shm/segment.js';
import { makeTensor, newId } from './transfer.js';

let sc: SidecarCluster;
test.before(async () => { sc = await startSidecars({ nodes: [[0, 1]] }); });
test.after.always(async () => { await sc?.stop(); });

/** A raw client speaking protocol 3 that records every reply it gets, by rid. */
async function rawClient(socketPath: string, rank: number) {
  const sock = await new Promise<Socket>((resolve, reject) => { const s = connect(socketPath, () => resolve(s)); s.once('error', reject); });
  const replies = new Map<number, Record<string, unknown>>();
  new FrameReader<Record<string, unknown>>(sock, { target: () => undefined, frame: (header) => replies.set(header.rid as number, header), error: () => {} });
  let rid = 0;
  const post = (msg: Record<string, unknown>) => { const r = ++rid; writeFrame(sock, { ...msg, rid: r }); return r; };
  const call = (msg: Record<string, unknown>) => { const r = post(msg); return waitUntil(`reply ${r}`, () => replies.get(r), { timeoutMs: 20_000 }); };
  const hello = await call({ op: 'hello', rank, group: [rank], wire: WIRE_VERSION });
  return { post, call, replies, hello, close: () => sock.destroy() };
}

test.serial('a quiet done that succeeds gets no reply, and the chunk is freed as by any done', async (t) => {
  const prod = await sc.client(0, { leaseIdleMs: 0 }); // no memory lent: bytesInUse counts the chunks alone
  const cons = await rawClient(sc.nodes[0]!.socketPath, 1);
  t.teardown(() => cons.close());
  t.true((cons.hello.wire as number) >= QUIET_DONE_VERSION);
  const id = newId();
  await prod.send(makeTensor('f32', [100, 1000]), id, [[1]]); // 400 KB: held in slots
  t.like(await cons.call({ op: 'recv', id, chunk: 0, deadline: Date.now() + 20_000 }), { ok: true, size: 400_000 });
  t.true((await sc.nodes[0]!.health()).bytesInUse > 0);
  const quiet = cons.post({ op: 'done', id, chunk: 0, quiet: true });
  const after = await cons.call({ op: 'recv', id: newId(), chunk: 0, deadline: Date.now() - 1 }); // answered after the done was served
  t.like(after, { ok: false });
  t.false(cons.replies.has(quiet), 'no reply to the quiet done');
  t.like(await sc.nodes[0]!.health(), { chunks: 0, bytesInUse: 0 });
});

test.serial('a quiet done that fails is answered with its error, and the sidecar keeps serving', async (t) => {
  const cons = await rawClient(sc.nodes[0]!.socketPath, 1);
  t.teardown(() => cons.close());
  const bad = cons.post({ op: 'done', id: '', chunk: 0, quiet: true });
  t.like(await waitUntil('the error reply', () => cons.replies.get(bad), { timeoutMs: 20_000 }), { ok: false, error: { code: 'SIDECAR_BAD_REQUEST' } });
  const unknown = cons.post({ op: 'done', id: newId(), chunk: 0, quiet: true }); // never held here
  t.like(await waitUntil('the error reply', () => cons.replies.get(unknown), { timeoutMs: 20_000 }), { ok: false, error: { code: 'SIDECAR_NOT_FOUND' } });
  t.like(await cons.call({ op: 'done', id: newId(), chunk: 0 }), { ok: false, error: { code: 'SIDECAR_NOT_FOUND' } }, 'a plain done fails the same way');
  t.like(await sc.nodes[0]!.health(), { status: 'ok' });
});

test.serial('once markDone resolves (no reply awaited) the chunk is freed, transfer after transfer', async (t) => {
  const prod = await sc.client(0, { leaseIdleMs: 0 }); // no memory lent: bytesInUse counts the chunks alone
  const cons = await sc.client(1);
  for (let i = 0; i < 20; i++) {
    const id = newId();
    await prod.send(makeTensor('u8', [300_000], i), id, [[1]]);
    t.is(((await cons.recv(id)) as { data: Uint8Array }).data[0], i & 255);
    await cons.markDone(id);
  }
  t.like(await sc.nodes[0]!.health(), { chunks: 0, bytesInUse: 0 });
});

test.serial('against a sidecar of protocol 2, markDone sends a plain done and resolves with its reply', async (t) => {
  // A stand-in for an older sidecar: says wire 2 and answers each request; records what it was sent.
  const dir = mkdtempSync(join(tmpdir(), 'cs-quiet-'));
  const seg = createSegment('old', 1 << 20, dir);
  const socketPath = join(dir, 'old.sock');
  const seen: Array<Record<string, unknown>> = [];
  let answerDone: (() => void) | undefined;
  const server = createServer((sock) => {
    new FrameReader<Record<string, unknown>>(sock, {
      target: () => undefined,
      frame: (req) => {
        seen.push(req);
        const reply = () => writeFrame(sock, { rid: req.rid, ok: true });
        if (req.op === 'hello') writeFrame(sock, { rid: req.rid, ok: true, node: 'old', instance: 'i', segment: { path: seg.path, size: seg.size }, ranks: [1], wire: 2 });
        else if (req.op === 'done') answerDone = reply;
        else reply();
      },
      error: () => {},
    });
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
  t.teardown(() => { server.close(); seg.unlink(); rmSync(dir, { recursive: true, force: true }); });
  const c = await SidecarClient.connect({ rank: 1, socketPath });
  t.teardown(() => c.close());
  let resolved = false;
  const marked = c.markDone('x', 0).then(() => { resolved = true; });
  await waitUntil('the done request', () => answerDone, { timeoutMs: 20_000 });
  const done = seen.find((r) => r.op === 'done')!;
  t.is(done.quiet, undefined, 'no quiet flag for an older sidecar');
  t.false(resolved, 'markDone waits for the reply');
  answerDone!();
  await marked;
  t.true(resolved);
});
