/**
 * Eric's in-place outputs (worker/in-place.ts) against a real sidecar server: each placed item holds its own shared
 * memory until taken for its send, a failed run gives back everything not taken, and the per-item byte shares add
 * up to the client's `sent`.
 */
import test from 'ava';
import type { SidecarClient } from '../../../../../sidecar/client/client.js';
import { InPlaceOutputs, sentSince } from '../../../../../executors/eric/worker/in-place.js';
import { waitUntil } from '../../../../../lib/wait.js';
import { type SidecarCluster, startSidecars } from '../../../../helpers/sidecar.js';

let sc: SidecarCluster;
let producer: SidecarClient;
test.before(async () => {
  sc = await startSidecars({ nodes: [[0, 1]] });
  producer = await sc.client(0, { leaseIdleMs: 0 });
});
test.after.always(async () => sc?.stop());

const inUse = async () => (await sc.nodeOf(0).health()).bytesInUse;
const SHAPE: [number, number] = [128, 256]; // 128 KiB: past the inline size, so it is shared memory

// Serial: they read the node's bytes in use.
test.serial('a failed run gives back every allocation it made and nothing stays held', async (t) => {
  const outputs = new InPlaceOutputs(producer);
  const views = [await outputs.placement(0, Date.now() + 10_000)(SHAPE), await outputs.placement(2, Date.now() + 10_000)(SHAPE)];
  t.true(views.every((v) => v?.length === SHAPE[0] * SHAPE[1]));
  t.is(await inUse(), 2 * 128 * 1024, 'two items, two allocations');
  outputs.releaseAll(); // what the worker does when the run throws
  t.true(await waitUntil('given back', async () => (await inUse()) === 0));
  t.is(outputs.take(0), undefined);
});

test.serial('an item taken for its send is sent with no copy, and its share of sent is what the send added', async (t) => {
  const consumer = await sc.client(1);
  const outputs = new InPlaceOutputs(producer);
  const since = sentSince(producer);
  const view = (await outputs.placement(1, Date.now() + 10_000)(SHAPE))!;
  view.fill(0.5);
  const placed = outputs.take(1)!;
  t.is(placed.data, view);
  outputs.releaseAll(); // nothing left to give back: the taken item is the sender's
  await producer.send(placed, 'in-place-unit', [[1]]);
  t.deepEqual(since(), { inPlaceBytes: 128 * 1024, copiedBytes: 0 });
  t.deepEqual(since(), { inPlaceBytes: 0, copiedBytes: 0 }, 'a share is reported once');
  const got = await consumer.recv('in-place-unit');
  t.is((got as { data: Float32Array }).data[SHAPE[0] * SHAPE[1] - 1], 0.5);
  await consumer.markDone('in-place-unit');
  t.true(await waitUntil('freed', async () => (await inUse()) === 0));
});

test.serial('a failed allocation declines the placement, so the item is copied at send time instead', async (t) => {
  const outputs = new InPlaceOutputs({ allocate: async () => { throw new Error('no memory'); }, release: () => undefined });
  t.is(await outputs.placement(0, Date.now() + 10_000)(SHAPE), undefined);
  t.is(outputs.take(0), undefined);
});
