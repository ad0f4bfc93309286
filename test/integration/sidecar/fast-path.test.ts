/**
 * The one-frame fast path for small objects (≤ INLINE_MAX_BYTES): held in the sidecar's heap (no slot), handed back
 * inside the recv reply, the rank counted done at recv; the fallback to slots past the size limit or the heap budget;
 * a client speaking protocol version 1 still reads them from shared memory.
 */
import test from 'ava';
import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { startSidecars, type SidecarCluster } from '../../helpers/sidecar.js';
import { waitUntil } from '../../../lib/wait.js';
import { FrameReader, writeFrame } from '../../../lib/frames.js';
import { INLINE_MAX_BYTES, WIRE_VERSION } from '../../../sidecar/wire/protocol.js';
import { openSegment } from '../../../sidecar/shm/segment.js';
import { assertSameTensor, makeTensor, newId } from './transfer.js';

let sc: SidecarCluster;
test.before(async () => { sc = await startSidecars({ nodes: [[0, 1], [2, 3]] }); });
test.after.always(async () => { await sc?.stop(); });

const health = (node: number) => sc.nodes[node]!.health();

test.serial('an object under the inline limit round-trips inline: no slot, held in the heap until its recv', async (t) => {
  const id = newId();
  const data = randomBytes(1000);
  const prod = await sc.client(0);
  const cons = await sc.client(1);
  await prod.send(new Uint8Array(data), id, [[1]]);
  t.like(await health(0), { chunks: 1, bytesInUse: 0, inlineBytes: 1000 });
  t.deepEqual(Buffer.from((await cons.recv(id)) as Uint8Array), data);
  t.like(await health(0), { chunks: 0, bytesInUse: 0, inlineBytes: 0 }, 'the reader got a copy: the chunk is freed at its recv');
  t.deepEqual(Buffer.from((await cons.recv(id)) as Uint8Array), data, 'a second recv before markDone gets it again');
  await cons.markDone(id);
  await t.throwsAsync(cons.recv(id), { code: 'SIDECAR_ALREADY_CONSUMED' } as never);
});

test.serial('at the limit: INLINE_MAX_BYTES bytes take the fast path, one byte more takes slots', async (t) => {
  const prod = await sc.client(0, { leaseIdleMs: 0 }); // no memory lent for a next send: bytesInUse is the chunk's alone
  const cons = await sc.client(1);
  const atLimit = randomBytes(INLINE_MAX_BYTES);
  const above = randomBytes(INLINE_MAX_BYTES + 1);
  const [a, b] = [newId(), newId()];
  await prod.send(new Uint8Array(atLimit), a, [[1]]);
  t.like(await health(0), { bytesInUse: 0, inlineBytes: INLINE_MAX_BYTES });
  await prod.send(new Uint8Array(above), b, [[1]]);
  const h = await health(0);
  t.is(h.inlineBytes, INLINE_MAX_BYTES, 'the larger one is not in the heap');
  t.true(h.bytesInUse >= INLINE_MAX_BYTES + 1, `slots hold it (${h.bytesInUse} bytes in use)`);
  t.deepEqual(Buffer.from((await cons.recv(a)) as Uint8Array), atLimit);
  t.deepEqual(Buffer.from((await cons.recv(b)) as Uint8Array), above);
  t.like(await health(0), { chunks: 1, inlineBytes: 0 }, 'the slot-held chunk waits for markDone');
  await cons.markDone(a);
  await cons.markDone(b);
  t.like(await health(0), { chunks: 0, bytesInUse: 0, inlineBytes: 0 });
});

test.serial('a fast-path object read through a remote sidecar arrives intact and is held in that sidecar\'s heap', async (t) => {
  const id = newId();
  const sent = makeTensor('f64', [300], 7); // 2400 bytes
  const prod = await sc.client(0);
  const cons = await sc.client(2);
  await prod.send(sent, id, [[2]]);
  await waitUntil('the chunk on n1', async () => (await health(1)).chunks === 1, { timeoutMs: 20_000 });
  t.like(await health(1), { bytesInUse: 0, inlineBytes: 2400 });
  const got = await cons.recv(id);
  assertSameTensor(t, got, sent, 'across nodes');
  t.is((got as { data: Float64Array }).data.byteOffset % 8, 0, 'the view is aligned for its dtype');
  await cons.markDone(id);
  await waitUntil('both nodes idle', async () => {
    const [h0, h1] = [await health(0), await health(1)];
    return h0.chunks === 0 && h1.chunks === 0 && h0.inlineBytes === 0 && h1.inlineBytes === 0;
  }, { timeoutMs: 20_000 });
  t.pass();
});

test.serial('a reader passing {group: true} after an inline recv frees the chunk its connected group-mate never read', async (t) => {
  const id = newId();
  const prod = await sc.client(0);
  const a = await sc.client(2, { group: [2, 3] });
  const b = await sc.client(3, { group: [2, 3] });
  await prod.send({ hello: 'group' }, id, [[2, 3]]);
  t.deepEqual(await a.recv(id), { hello: 'group' });
  t.is((await health(1)).chunks, 1, 'rank 3 has a client: it may still read');
  await a.markDone(id, 0, { group: true });
  t.like(await health(1), { chunks: 0, inlineBytes: 0 });
  b.close();
});

test.serial('past the heap budget a small object takes slots, and back-pressure still holds', async (t) => {
  // 8 slots of 4 KiB = 32 KiB: a heap budget of 2 KiB.
  const tiny = await startSidecars({ nodes: [[0, 1]], slabs: [{ slotBytes: 4096, slots: 8 }] });
  t.teardown(() => tiny.stop());
  const prod = await tiny.client(0);
  const cons = await tiny.client(1);
  const h = () => tiny.nodes[0]!.health();
  const [a, b] = [newId(), newId()];
  await prod.send(new Uint8Array(1500).fill(1), a, [[1]]);
  t.like(await h(), { inlineBytes: 1500, bytesInUse: 0 });
  await prod.send(new Uint8Array(1500).fill(2), b, [[1]]);
  t.like(await h(), { inlineBytes: 1500, bytesInUse: 4096 }, 'the second would pass the budget: a slot');
  await prod.send(new Uint8Array(28 * 1024), newId(), [[1]], { timeoutMs: 20_000 }); // fills the slab
  await t.throwsAsync(prod.send(new Uint8Array(1500), newId(), [[1]], { timeoutMs: 200 }), { code: 'SIDECAR_TIMEOUT' } as never);
  t.deepEqual([...(await cons.recv(a)) as Uint8Array].slice(0, 3), [1, 1, 1]);
  t.deepEqual([...(await cons.recv(b)) as Uint8Array].slice(0, 3), [2, 2, 2]);
});

/** A raw client of protocol version 1 (its hello names no version): what the executors of an older release send. */
async function versionOneClient(socketPath: string, rank: number) {
  const sock = await new Promise<Socket>((resolve, reject) => { const s = connect(socketPath, () => resolve(s)); s.once('error', reject); });
  const replies = new Map<number, { header: Record<string, unknown>; payload: Buffer | null }>();
  new FrameReader<Record<string, unknown>>(sock, { target: () => undefined, frame: (header, payload) => replies.set(header.rid as number, { header, payload }), error: () => {} });
  let rid = 0;
  const call = async (msg: Record<string, unknown>) => {
    const r = ++rid;
    writeFrame(sock, { ...msg, rid: r });
    return waitUntil(`reply ${r}`, () => replies.get(r), { timeoutMs: 20_000 });
  };
  const hello = (await call({ op: 'hello', rank, group: [rank] })).header as { segment: { path: string; size: number }; wire?: number };
  return { call, hello, close: () => sock.destroy() };
}

test.serial('a client of protocol version 1 reads a fast-path object from shared memory, at an offset', async (t) => {
  const id = newId();
  const prod = await sc.client(0);
  const old = await versionOneClient(sc.nodes[0]!.socketPath, 1);
  t.teardown(() => old.close());
  await prod.send({ v: 1 }, id, [[1]]);
  const r = await old.call({ op: 'recv', id, chunk: 0, deadline: Date.now() + 20_000 });
  t.like(r.header, { ok: true, kind: 'json', size: 7 });
  t.is(r.header.inline, undefined);
  t.is(r.payload?.length ?? 0, 0, 'no bytes inside the reply');
  const offset = r.header.offset as number;
  t.is(old.hello.wire, WIRE_VERSION, 'the sidecar says its own version');
  const segment = openSegment(old.hello.segment.path, old.hello.segment.size);
  t.is(Buffer.from(segment.buffer, offset, 7).toString(), '{"v":1}');
  t.true((await health(0)).bytesInUse > 0, 'copied into a slot for this reader');
  await old.call({ op: 'done', id, chunk: 0 });
  t.like(await health(0), { chunks: 0, bytesInUse: 0, inlineBytes: 0 });
});

test.serial('small objects received together keep their own bytes while later replies are read into the client\'s reused buffer', async (t) => {
  const prod = await sc.client(0);
  const cons = await sc.client(1);
  const sizes = [1, 100, 4096, 20_000, INLINE_MAX_BYTES]; // below and above the size read straight into its own buffer
  const sent = sizes.map((n) => ({ id: newId(), data: randomBytes(n) }));
  await Promise.all(sent.map(({ id, data }) => prod.send(new Uint8Array(data), id, [[1]])));
  const got = await Promise.all(sent.map(({ id }) => cons.recv(id) as Promise<Uint8Array>)); // replies come in few reads
  for (let i = 0; i < 50; i++) { // more replies through the same read buffer
    const id = newId();
    await prod.send(new Uint8Array(randomBytes(3000)), id, [[1]]);
    await cons.recv(id);
    await cons.markDone(id);
  }
  sent.forEach(({ data }, i) => t.deepEqual(Buffer.from(got[i]!), data, `${sizes[i]} bytes intact`));
  for (const { id } of sent) await cons.markDone(id);
});
