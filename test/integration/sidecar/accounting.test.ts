/** Memory is accounted for: bytes in use return to zero after a burst of 10 000 transfers; when markDone frees a chunk for its groups. */
import test from 'ava';
import { startSidecars, type SidecarCluster } from '../../helpers/sidecar.js';
import { waitUntil } from '../../../lib/wait.js';
import { makeTensor, newId } from './transfer.js';

let sc: SidecarCluster;
test.before(async () => { sc = await startSidecars({ nodes: [[0, 1], [2, 3]] }); });
test.after.always(async () => { await sc?.stop(); });

test.serial('bytes in use return to zero on both nodes after 10 000 transfers', async (t) => {
  t.timeout(300_000); // a hang guard, not a speed bound: 10 000 transfers took over 60 s at load 35 (--concurrency 8 on 2 cores)
  const prod = await sc.client(0);
  const local = await sc.client(1);
  const remote = await sc.client(2);
  const small = makeTensor('bf16', [64], 1);
  let next = 0;
  const worker = async () => {
    while (next < 10_000) {
      const i = next++;
      const id = `burst-${i}`;
      const consumer = i % 4 === 0 ? remote : local;
      const data = i % 2 === 0 ? { i } : small;
      const [, got] = await Promise.all([prod.send(data, id, [[consumer.rank]]), consumer.recv(id)]);
      if (got === null) throw new Error(`transfer ${i} lost`);
      await consumer.markDone(id);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  for (const node of sc.nodes) {
    const h = await waitUntil(`${node.name} idle`, async () => { const x = await node.health(); return x.bytesInUse === 0 && x.inlineBytes === 0 && x.chunks === 0 ? x : false; });
    t.is(h.bytesInUse, 0, node.name);
  }
  const moved = Number(/^sidecar_transfers_total\{origin="local",node="n0"\} (\d+)/m.exec(await sc.nodes[0]!.metrics())?.[1]);
  t.true(moved >= 10_000, `n0 stored ${moved} chunks`);
});

test.serial('a chunk marked done by only one of two consumer groups stays held until the other marks it done', async (t) => {
  const id = newId();
  const prod = await sc.client(0);
  const a = await sc.client(1);
  const b = await sc.client(0); // a second executor on rank 0's device: both groups live on n0
  await prod.send(makeTensor('f32', [1176]), id, [[1], [0]]);
  await a.recv(id);
  await a.markDone(id);
  t.is((await sc.nodes[0]!.health()).chunks, 1);
  await b.recv(id);
  await b.markDone(id);
  t.is((await sc.nodes[0]!.health()).chunks, 0);
});

test.serial('a chunk for a two-rank group whose other rank has no client is freed by the reading rank\'s markDone', async (t) => {
  const id = newId();
  const prod = await sc.client(0);
  const reader = await sc.client(2, { group: [2, 3] }); // rank 3 never connects in this file before this test
  await prod.send(makeTensor('f32', [20_000]), id, [[2, 3]]); // above INLINE_MAX_BYTES: a smaller object is freed at its recv
  await reader.recv(id);
  t.is((await sc.nodes[1]!.health()).chunks, 1);
  await reader.markDone(id);
  t.is((await sc.nodes[1]!.health()).chunks, 0);
});

test.serial('a chunk a connected group-mate has not marked done is held, and freed once that group-mate\'s client disconnects', async (t) => {
  const id = newId();
  const prod = await sc.client(0);
  const a = await sc.client(2, { group: [2, 3] });
  const b = await sc.client(3, { group: [2, 3] });
  await prod.send(makeTensor('f32', [1176]), id, [[2, 3]]);
  await a.recv(id);
  await a.markDone(id);
  t.is((await sc.nodes[1]!.health()).chunks, 1, 'rank 3 has a client: it may still read');
  b.close();
  t.true(await waitUntil('freed after rank 3 left', async () => (await sc.nodes[1]!.health()).chunks === 0));
});
