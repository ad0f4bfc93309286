/** The peer directory: fixed peers, plus the sidecars registered in the Store, re-read on demand. */
import test from 'ava';
import { MemoryStore } from '../../../control/store/memory.js';
import { PeerDirectory, type KnownPeer } from '../../../sidecar/server/directory.js';
import { sampleSidecar } from '../../helpers/store-records.js';

function directoryOn(store: MemoryStore | undefined, fixed: KnownPeer[] = []) {
  const changes: Array<[string, KnownPeer | undefined]> = [];
  const dir = new PeerDirectory({ self: 'n0', fixed, registry: store, changed: (node, peer) => void changes.push([node, peer]), minRefreshMs: 0 });
  return { dir, changes };
}

test('a rank registered after the last read is known once the registrations are read again', async (t) => {
  const store = new MemoryStore();
  const { dir } = directoryOn(store);
  await dir.refresh();
  t.is(dir.nodeOf(2), undefined);
  await store.registerSidecar(sampleSidecar('n1', { ranks: [2, 3] }));
  await dir.refresh();
  t.is(dir.nodeOf(3), 'n1');
  t.like(dir.peer('n1'), { host: '10.0.0.1', port: 10001, instance: 'n1-i1' });
});

test('the sidecar’s own registration is not a peer', async (t) => {
  const store = new MemoryStore();
  await store.registerSidecar(sampleSidecar('n0', { ranks: [0] }));
  const { dir } = directoryOn(store);
  await dir.refresh();
  t.deepEqual(dir.nodes(), []);
  t.is(dir.nodeOf(0), undefined);
});

test('a peer that moved is reported with its new address, one that left with undefined', async (t) => {
  const store = new MemoryStore();
  await store.registerSidecar(sampleSidecar('n1', { ranks: [2] }));
  await store.registerSidecar(sampleSidecar('n2', { ranks: [3] }));
  const { dir, changes } = directoryOn(store);
  await dir.refresh();
  t.deepEqual(changes, []);
  await store.registerSidecar(sampleSidecar('n1', { ranks: [2], instance: 'n1-i2', peerPort: 20001 }));
  await store.deleteSidecar('n2', 'n2-i1');
  await dir.refresh();
  t.deepEqual(changes.map(([node, peer]) => [node, peer?.port]), [['n1', 20001], ['n2', undefined]]);
  t.is(dir.nodeOf(3), undefined);
});

test('concurrent refreshes share one read of the store', async (t) => {
  const store = new MemoryStore();
  let reads = 0;
  const counting = { listSidecars: () => { reads++; return store.listSidecars(); } };
  const dir = new PeerDirectory({ self: 'n0', fixed: [], registry: counting, changed: () => {}, minRefreshMs: 0 });
  await Promise.all([dir.refresh(), dir.refresh(), dir.refresh()]);
  t.is(reads, 1);
});

test('without a store only the fixed peers are known, and refresh reads nothing', async (t) => {
  const { dir } = directoryOn(undefined, [{ node: 'n1', host: '127.0.0.1', port: 7101, ranks: [2] }]);
  await dir.refresh();
  t.false(dir.dynamic);
  t.is(dir.nodeOf(2), 'n1');
});

test('a refresh soon after the last read waits for the next one, so a sidecar registered in between is found', async (t) => {
  const store = new MemoryStore();
  const dir = new PeerDirectory({ self: 'n0', fixed: [], registry: store, changed: () => {}, minRefreshMs: 50 });
  await dir.refresh();
  await store.registerSidecar(sampleSidecar('n1', { ranks: [2] }));
  await dir.refresh();
  t.is(dir.nodeOf(2), 'n1');
});
