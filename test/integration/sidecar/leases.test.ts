/** Memory a sidecar lends a client with a large send's reply, so the next large send needs one round trip. */
import test from 'ava';
import { startSidecars, type SidecarCluster } from '../../helpers/sidecar.js';
import type { SidecarClient } from '../../../sidecar/client/client.js';
import { waitUntil } from '../../../lib/wait.js';
import { assertSameTensor, makeTensor, newId } from './transfer.js';

const KiB = 1024;
let sc: SidecarCluster;
test.before(async () => { sc = await startSidecars({ nodes: [[0, 1, 2, 3, 4, 5]] }); });
test.after.always(async () => { await sc?.stop(); });

const inUse = async () => (await sc.nodes[0]!.health()).bytesInUse;

/** A large send from `prod`, received and marked done by `cons`. */
async function transfer(prod: SidecarClient, cons: SidecarClient, bytes: number): Promise<void> {
  const id = newId();
  await prod.send(makeTensor('u8', [bytes]), id, [[cons.rank]]);
  await cons.recv(id);
  await cons.markDone(id);
}

test.serial('after a large send the client holds a lease of that size', async (t) => {
  const [prod, cons] = [await sc.client(0, { leaseIdleMs: 60_000 }), await sc.client(1)];
  await transfer(prod, cons, 1024 * KiB);
  t.is(await inUse(), 1024 * KiB, 'the lease');
  prod.close();
  await waitUntil('freed', async () => (await inUse()) === 0);
});

test.serial('a client gives back a lease it does not use', async (t) => {
  const [prod, cons] = [await sc.client(0, { leaseIdleMs: 300 }), await sc.client(1)];
  await transfer(prod, cons, 1024 * KiB);
  t.true(await waitUntil('lease given back', async () => (await inUse()) === 0));
});

test.serial('a smaller send into a lease holds only the slots it needs and arrives intact', async (t) => {
  const [prod, cons] = [await sc.client(2, { leaseIdleMs: 60_000 }), await sc.client(3)];
  await transfer(prod, cons, 1024 * KiB);
  const second = newId();
  const small = makeTensor('u8', [300 * KiB], 7);
  await prod.send(small, second, [[3]]); // into the 1 MiB lease, trimmed to 2 slots of 256 KiB; lends 2 slots again
  t.is(await inUse(), 2 * 512 * KiB);
  assertSameTensor(t, await cons.recv(second), small, 'sent through a lease');
  await cons.markDone(second);
  prod.close();
  t.true(await waitUntil('all given back', async () => (await inUse()) === 0));
});

test.serial('a client that disconnects while holding a lease frees it', async (t) => {
  const [prod, cons] = [await sc.client(4, { leaseIdleMs: 60_000 }), await sc.client(5)];
  await transfer(prod, cons, 512 * KiB);
  t.is(await inUse(), 512 * KiB);
  prod.close();
  t.true(await waitUntil('freed', async () => (await inUse()) === 0));
});
