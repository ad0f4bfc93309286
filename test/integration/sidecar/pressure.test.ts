/** Back-pressure with a tiny slab (no loss, no deadlock), send deadlines, and expiry of unconsumed data. */
import test from 'ava';
import { startSidecars, type SidecarCluster } from '../../helpers/sidecar.js';
import { waitUntil } from '../../../lib/wait.js';
import { SidecarError } from '../../../sidecar/errors.js';
import { assertSameTensor, makeTensor, newId } from './transfer.js';

let sc: SidecarCluster;
// 8 slots of 4 KiB = 32 KiB per node: two 16 KiB tensors fill it.
test.before(async () => { sc = await startSidecars({ nodes: [[0, 1], [2, 3]], slabs: [{ slotBytes: 4096, slots: 8 }], sweepMs: 50 }); });
test.after.always(async () => { await sc?.stop(); });

/** The value of counter `name` (whose labels include `label`, e.g. 'reason="expired"', if given). */
const counter = (text: string, name: string, label = '') => Number(new RegExp(`^${name}\\{[^}]*${label}[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
const expired = async () => counter(await sc.nodes[0]!.metrics(), 'sidecar_chunks_freed_total', 'reason="expired"');
/** Memory waits on both nodes (across nodes, the receiving node is the one that fills up). */
const waits = async () => counter(await sc.nodes[0]!.metrics(), 'sidecar_memory_waits_total') + counter(await sc.nodes[1]!.metrics(), 'sidecar_memory_waits_total');

for (const remote of [false, true]) {
  test.serial(`40 chunks through a 32 KiB slab all arrive intact (${remote ? 'across nodes' : 'in one node'})`, async (t) => {
    const id = newId();
    const prod = await sc.client(0);
    const cons = await sc.client(remote ? 2 : 1);
    const n = 40;
    const chunks = Array.from({ length: n }, (_, i) => makeTensor('f32', [4096], i));
    const waitsBefore = await waits();
    const sending = (async () => { for (let i = 0; i < n; i++) await prod.send(chunks[i], id, [[cons.rank]], { chunk: i, numChunks: n, timeoutMs: 20_000 }); })();
    sending.catch(() => {}); // awaited below; a rejection while the slab fills must not go unhandled
    // The consumer starts only once a send waits for memory: whether a racing consumer ever lets the slab fill depends on scheduling.
    await waitUntil('the slab is full (a send waits for memory)', async () => (await waits()) > waitsBefore, { timeoutMs: 20_000 });
    for (let i = 0; i < n; i++) {
      assertSameTensor(t, await cons.recv(id, i, { timeoutMs: 20_000 }), chunks[i]!, `chunk ${i}`);
      await cons.markDone(id, i);
    }
    await sending;
    t.is(await cons.recv(id, n), null);
    await waitUntil('memory free', async () => (await sc.nodes[0]!.health()).bytesInUse === 0 && (await sc.nodes[1]!.health()).bytesInUse === 0);
  });
}

test.serial('a send that never gets memory fails with SIDECAR_TIMEOUT at its deadline', async (t) => {
  const prod = await sc.client(0);
  const id = newId();
  await prod.send(makeTensor('f32', [8192]), id, [[1]]); // 32 KiB: the whole slab
  const err = await t.throwsAsync(prod.send(makeTensor('f32', [1024]), newId(), [[1]], { timeoutMs: 200 }));
  t.true(err instanceof SidecarError);
  t.is((err as SidecarError).code, 'SIDECAR_TIMEOUT');
  const c = await sc.client(1);
  await c.recv(id);
  await c.markDone(id);
});

test.serial('data nobody consumes is freed at its expiry and counted', async (t) => {
  const prod = await sc.client(0);
  const before = await expired();
  await prod.send(makeTensor('f32', [2048]), newId(), [[1]], { ttlMs: 100 });
  await waitUntil('expired', async () => (await expired()) === before + 1);
  t.is((await sc.nodes[0]!.health()).bytesInUse, 0);
});

test.serial('data larger than the whole slab fails at once with SIDECAR_TOO_LARGE', async (t) => {
  const prod = await sc.client(0);
  const err = await t.throwsAsync(prod.send(makeTensor('f32', [16384]), newId(), [[1]]));
  t.is((err as SidecarError).code, 'SIDECAR_TOO_LARGE');
});
