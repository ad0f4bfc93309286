import test from 'ava';
import { sidecarArgs, sidecarTopology } from '../../../../../control/platform/kubernetes/sidecar.js';
import { buildInventory } from '../../../../../policies/allocation.js';
import type { KubeNodeDevices } from '../../../../../control/platform/kubernetes/discovery.js';

const nodes: KubeNodeDevices[] = [
  { node: 'gpu-a', devices: 2, address: '10.0.0.1' },
  { node: 'gpu-b', devices: 4, address: '10.0.0.2' },
  { node: 'gpu-c', devices: 1, address: '10.0.0.3' },
];

test("each sidecar serves the ranks the resource manager gives its node's devices", (t) => {
  const inventory = buildInventory(nodes);
  for (const n of nodes)
    t.deepEqual(sidecarTopology(nodes, n.node, 10001).ranks, inventory.find((i) => i.node === n.node)!.devices.map((d) => d.globalRank), n.node);
});

test('the peers are the other GPU nodes at their addresses on the peer port', (t) => {
  t.deepEqual(sidecarTopology(nodes, 'gpu-b', 10001).peers, [
    { node: 'gpu-a', host: '10.0.0.1', port: 10001, ranks: [0, 1] },
    { node: 'gpu-c', host: '10.0.0.3', port: 10001, ranks: [6] },
  ]);
});

test('a node that is not a usable GPU node is refused, naming the ones that are', (t) => {
  t.throws(() => sidecarTopology(nodes, 'cpu-1', 10001), { message: 'node cpu-1 is not a Ready, schedulable GPU node (known: gpu-a, gpu-b, gpu-c)' });
});

test('with the store the arguments name no fixed peers: the sidecar finds them in the store', (t) => {
  const args = sidecarArgs(sidecarTopology(nodes, 'gpu-c', 10001), { socket: '/dev/shm/cornserve-sidecar.sock', httpPort: 10000, peerPort: 10001, storeUrl: 'redis://r:6379' });
  t.deepEqual(args, [
    '--node', 'gpu-c', '--ranks', '6', '--socket', '/dev/shm/cornserve-sidecar.sock', '--host', '10.0.0.3',
    '--peer-port', '10001', '--http-port', '10000', '--store-url', 'redis://r:6379',
  ]);
});

test('without a store the arguments fix the peers', (t) => {
  const args = sidecarArgs(sidecarTopology(nodes, 'gpu-c', 10001), { socket: '/dev/shm/cornserve-sidecar.sock', httpPort: 10000, peerPort: 10001 });
  t.deepEqual(args, [
    '--node', 'gpu-c', '--ranks', '6', '--socket', '/dev/shm/cornserve-sidecar.sock', '--host', '10.0.0.3',
    '--peer-port', '10001', '--http-port', '10000',
    '--peer', 'gpu-a=10.0.0.1:10001@0,1', '--peer', 'gpu-b=10.0.0.2:10001@2,3,4,5',
  ]);
});
