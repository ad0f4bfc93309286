/** Tensors an executor produces in place (allocate → write → send): no copy into shared memory, memory given back. */
import test from 'ava';
import { startSidecars, type SidecarCluster } from '../../helpers/sidecar.js';
import type { Tensor } from '../../../sidecar/tensor.js';
import { waitUntil } from '../../../lib/wait.js';
import { assertSameTensor, makeTensor, newId } from './transfer.js';

const KiB = 1024;
let sc: SidecarCluster;
test.before(async () => { sc = await startSidecars({ nodes: [[0, 1, 2, 3], [4]] }); });
test.after.always(async () => { await sc?.stop(); });

const inUse = async (node = 0) => (await sc.nodes[node]!.health()).bytesInUse;
/** Writes `want`'s values into `t` (what a model writing its output there does). */
const fill = (t: Tensor, want: Tensor) => { (t.data as Float32Array).set(want.data as Float32Array); };

test.serial('a tensor produced in place is received in the very memory it was written to', async (t) => {
  const prod = await sc.client(0, { leaseIdleMs: 0 });
  const cons = await sc.client(1);
  const want = makeTensor('f32', [64, 1024]);
  const out = await prod.allocate('f32', [64, 1024]);
  fill(out, want);
  const offset = out.data.byteOffset;
  const id = newId();
  await prod.send(out, id, [[1]]);
  const got = (await cons.recv(id)) as Tensor;
  assertSameTensor(t, got, want, 'in place');
  t.is(got.data.byteOffset, offset, 'the consumer reads the producer\'s memory: nothing was copied');
  t.deepEqual(prod.sent, { inPlaceBytes: 256 * KiB, copiedBytes: 0 });
  await cons.markDone(id);
  t.true(await waitUntil('freed', async () => (await inUse()) === 0));
});

test.serial('a tensor produced in place reaches another node intact', async (t) => {
  const prod = await sc.client(2, { leaseIdleMs: 0 });
  const cons = await sc.client(4);
  const want = makeTensor('f32', [3, 100_000], 5);
  const out = await prod.allocate('f32', [3, 100_000]);
  fill(out, want);
  const id = newId();
  await prod.send(out, id, [[4]]);
  assertSameTensor(t, await cons.recv(id), want, 'across nodes');
  await cons.markDone(id);
  t.is(prod.sent.inPlaceBytes, 1_200_000);
});

test.serial('release gives the memory of an unsent tensor back', async (t) => {
  const prod = await sc.client(3, { leaseIdleMs: 0 });
  const out = await prod.allocate('u8', [512 * KiB]);
  t.is(await inUse(), 512 * KiB, 'reserved');
  prod.release(out);
  t.true(await waitUntil('given back', async () => (await inUse()) === 0));
});

test.serial('closing the client gives unsent allocations back', async (t) => {
  const prod = await sc.client(3, { leaseIdleMs: 0 });
  await prod.allocate('u8', [300 * KiB]);
  t.true((await inUse()) > 0);
  prod.close();
  t.true(await waitUntil('freed with the connection', async () => (await inUse()) === 0));
});

test.serial('a small tensor gets ordinary memory and travels inside the request', async (t) => {
  const prod = await sc.client(1, { leaseIdleMs: 0 });
  const cons = await sc.client(0);
  const out = await prod.allocate('i32', [16]);
  t.is(await inUse(), 0, 'no shared memory for it');
  (out.data as Int32Array).set(Int32Array.from({ length: 16 }, (_, i) => i * 3));
  const id = newId();
  await prod.send(out, id, [[0]]);
  t.deepEqual(Array.from(((await cons.recv(id)) as Tensor).data as Int32Array), Array.from({ length: 16 }, (_, i) => i * 3));
  await cons.markDone(id);
  t.deepEqual(prod.sent, { inPlaceBytes: 0, copiedBytes: 0 }, 'not a large send');
});

test.serial('a tensor from ordinary memory is copied, as before', async (t) => {
  const prod = await sc.client(2, { leaseIdleMs: 0 });
  const cons = await sc.client(1);
  const data = makeTensor('u8', [200 * KiB]);
  const id = newId();
  await prod.send(data, id, [[1]]);
  assertSameTensor(t, await cons.recv(id), data, 'copied');
  await cons.markDone(id);
  t.is(prod.sent.copiedBytes, 200 * KiB);
});

test.serial('allocate rejects a bad shape or dtype before reserving memory', async (t) => {
  const prod = await sc.client(3, { leaseIdleMs: 0 });
  await t.throwsAsync(prod.allocate('f32', [2, -1]), { message: /shape must be non-negative integers/ });
  await t.throwsAsync(prod.allocate('f8' as never, [2]), { message: /unknown dtype f8/ });
  t.is(await inUse(), 0);
});

test.serial('an allocation lost with a restarted sidecar is sent by copying from its view', async (t) => {
  const n0 = sc.nodes[0]!;
  const prod = await sc.client(0, { leaseIdleMs: 0 });
  const cons = await sc.client(4);
  const want = makeTensor('f32', [128, 1024], 9);
  const out = await prod.allocate('f32', [128, 1024]);
  fill(out, want);
  await n0.stop();
  await n0.start(); // the reservation went with the old process; the client reconnects on its next call
  const id = newId();
  await prod.send(out, id, [[4]]);
  assertSameTensor(t, await cons.recv(id), want, 'after the restart');
  await cons.markDone(id);
  t.is(prod.sent.copiedBytes, 512 * KiB, 'copied into the new sidecar\'s memory');
});
