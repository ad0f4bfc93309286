/** A sidecar's lease keeps its registration alive, brings it back when lost, and reaps the sidecars that stopped renewing. */
import test from 'ava';
import { MemoryStore } from '../../../control/store/memory.js';
import { SidecarLease } from '../../../sidecar/server/lease.js';
import { logger } from '../../../lib/log.js';
import { waitUntil } from '../../../lib/wait.js';
import { sampleChunk, sampleSidecar } from '../../helpers/store-records.js';

const LEASE_MS = 90; // renewed every 30 ms

function leaseOn(store: MemoryStore, node = 'n0') {
  const { leaseExpiresAt: _, ...record } = sampleSidecar(node);
  const events = { reregistered: 0, ticks: 0 };
  const lease = new SidecarLease(store, record, LEASE_MS, {
    reregistered: () => void events.reregistered++,
    ticked: () => void events.ticks++,
  }, logger('test-lease'));
  return { lease, record, events };
}

test('a started lease registers the sidecar and keeps renewing it', async (t) => {
  const store = new MemoryStore();
  const { lease, events } = leaseOn(store);
  await lease.start();
  t.teardown(() => lease.stop());
  const first = (await store.getSidecar('n0'))!.leaseExpiresAt;
  await waitUntil('a renewal', async () => (await store.getSidecar('n0'))!.leaseExpiresAt > first);
  t.is(events.reregistered, 0);
});

test('a lost registration is made again and the hook puts the chunk entries back', async (t) => {
  const store = new MemoryStore();
  const { lease, record, events } = leaseOn(store);
  await lease.start();
  t.teardown(() => lease.stop());
  await store.deleteSidecar('n0', record.instance); // reaped during a long pause, say
  await waitUntil('registered again', () => store.getSidecar('n0'));
  await waitUntil('the hook', () => events.reregistered === 1);
  t.pass();
});

test('every tick reaps the sidecars whose lease ended, with their chunk entries', async (t) => {
  const store = new MemoryStore();
  await store.registerSidecar(sampleSidecar('dead', { leaseExpiresAt: Date.now() - 1 }));
  await store.putChunk(sampleChunk('aa01', 0, { node: 'dead', expiresAt: Date.now() + 60_000 }));
  const { lease } = leaseOn(store, 'live');
  await lease.start();
  t.teardown(() => lease.stop());
  await waitUntil('dead reaped', async () => (await store.getSidecar('dead')) === undefined);
  t.deepEqual(await store.listChunks(), []);
  t.deepEqual((await store.listSidecars()).map((s) => s.node), ['live']);
});

test('every tick removes chunk entries a lease past their expiry (deletes a live sidecar failed to make)', async (t) => {
  const store = new MemoryStore();
  await store.putChunk(sampleChunk('aa01', 0, { node: 'n0', expiresAt: Date.now() - 10 * LEASE_MS }));
  await store.putChunk(sampleChunk('bb02', 0, { node: 'n0', expiresAt: Date.now() + 60_000 }));
  const { lease } = leaseOn(store);
  await lease.start();
  t.teardown(() => lease.stop());
  await waitUntil('the stale entry removed', async () => (await store.getChunk('aa01', 0)) === undefined);
  t.truthy(await store.getChunk('bb02', 0));
});

test('stop removes the registration and the chunk entries of its node', async (t) => {
  const store = new MemoryStore();
  const { lease } = leaseOn(store);
  await lease.start();
  await store.putChunk(sampleChunk('aa01', 0, { node: 'n0', expiresAt: Date.now() + 60_000 }));
  await lease.stop();
  t.is(await store.getSidecar('n0'), undefined);
  t.deepEqual(await store.listChunks(), []);
});
