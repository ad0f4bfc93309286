import test from 'ava';
import { gpuNodes } from '../../../../../control/platform/kubernetes/discovery.js';

const node = (name: string, gpus: string | undefined, ready = 'True', extra: Record<string, unknown> = {}) => ({
  metadata: { name },
  status: {
    allocatable: { cpu: '8', ...(gpus !== undefined ? { 'nvidia.com/gpu': gpus } : {}) },
    conditions: [{ type: 'MemoryPressure', status: 'False' }, { type: 'Ready', status: ready }],
    addresses: [{ type: 'Hostname', address: name }, { type: 'InternalIP', address: `10.0.0.${name.length}` }],
  },
  ...extra,
});

test('only Ready nodes with allocatable GPUs are listed, sorted by name', (t) => {
  const nodes = [node('gpu-b', '2'), node('cpu-only', undefined), node('gpu-a', '4'), node('gpu-down', '8', 'False'), node('gpu-zero', '0')];
  t.deepEqual(gpuNodes(nodes, 'nvidia.com/gpu', 10000).map((n) => [n.node, n.devices]), [['gpu-a', 4], ['gpu-b', 2]]);
});

test("a node's sidecar URL is its InternalIP and the sidecar port", (t) => {
  t.is(gpuNodes([node('gpu-a', '1')], 'nvidia.com/gpu', 10000)[0]!.sidecarUrl, 'http://10.0.0.5:10000');
});

test('a cordoned node is not offered for new executors', (t) => {
  t.deepEqual(gpuNodes([node('gpu-a', '1', 'True', { spec: { unschedulable: true } })], 'nvidia.com/gpu', 10000), []);
});

test('another extended resource can stand for devices', (t) => {
  const n = { ...node('trn-a', undefined), status: { ...node('trn-a', undefined).status, allocatable: { 'aws.amazon.com/neuron': '16' } } };
  t.is(gpuNodes([n], 'aws.amazon.com/neuron', 10000)[0]!.devices, 16);
});
