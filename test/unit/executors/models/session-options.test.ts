import test from 'ava';
import ort from 'onnxruntime-node';
import {
  ExecutionProviderError, deviceAssignmentFromEnv, describeExecution, resolveExecution, sessionDevice, sessionOptionsFor,
} from '../../../../executors/models/session-options.js';

const CPU_ONLY = [{ name: 'cpu', bundled: true }, { name: 'webgpu', bundled: true }, { name: 'cuda', bundled: false }, { name: 'tensorrt', bundled: false }];
const WITH_CUDA = CPU_ONLY.map((b) => (b.name === 'cuda' ? { ...b, bundled: true } : b));
const WITH_TRT = WITH_CUDA.map((b) => (b.name === 'tensorrt' ? { ...b, bundled: true } : b));

test('a CPU assignment builds the cpu provider with the thread count', (t) => {
  const e = resolveExecution(deviceAssignmentFromEnv({}), CPU_ONLY, false);
  t.deepEqual(sessionOptionsFor(sessionDevice(e, 0, 2), { executionMode: 'sequential' }), {
    executionMode: 'sequential', intraOpNumThreads: 2, executionProviders: ['cpu'],
  });
});

test('a CUDA assignment builds the cuda provider with the rank\'s ordinal', (t) => {
  const e = resolveExecution(deviceAssignmentFromEnv({ CORNSERVE_DEVICE_KIND: 'cuda', CORNSERVE_DEVICE_ORDINALS: '2,3' }), WITH_CUDA, false);
  t.deepEqual(sessionOptionsFor(sessionDevice(e, 1)), { executionProviders: [{ name: 'cuda', deviceId: 3 }] });
  t.deepEqual(describeExecution(e), { provider: 'cuda', device: 'cuda:2,3', cpuFallback: false });
});

test('TensorRT goes first, then CUDA, on the same ordinal', (t) => {
  const e = resolveExecution(deviceAssignmentFromEnv({ CORNSERVE_DEVICE_KIND: 'cuda', CORNSERVE_DEVICE_ORDINALS: '1', CORNSERVE_TENSORRT: '1' }), WITH_TRT, false);
  t.deepEqual(sessionOptionsFor(sessionDevice(e)).executionProviders, [{ name: 'tensorrt', deviceId: 1 }, { name: 'cuda', deviceId: 1 }]);
});

test('CUDA asked for but not installed is an error naming the cause and the install flag', (t) => {
  const err = t.throws(() => resolveExecution({ kind: 'cuda', ordinals: [0] }, CPU_ONLY, false), { instanceOf: ExecutionProviderError });
  t.regex(err.message, /CUDA execution provider not installed/);
  t.regex(err.message, /ONNXRUNTIME_NODE_INSTALL=cuda12/);
  t.regex(err.message, /--allow-cpu-fallback/);
});

test('the installed onnxruntime-node has no CUDA provider, so a GPU assignment fails at start-up here', (t) => {
  // The real backend list of this machine's onnxruntime-node (CPU binaries only; see docs/gpus.md).
  t.throws(() => resolveExecution({ kind: 'cuda', ordinals: [0] }, ort.listSupportedBackends(), false), { instanceOf: ExecutionProviderError });
});

test('with CPU fallback allowed, a missing CUDA provider runs on the CPU and says so for /health', (t) => {
  const e = resolveExecution({ kind: 'cuda', ordinals: [0, 1] }, CPU_ONLY, true);
  t.deepEqual(sessionOptionsFor(sessionDevice(e, 1)).executionProviders, ['cpu']);
  const h = describeExecution(e);
  t.like(h, { provider: 'cpu', cpuFallback: true });
  t.regex(h.device, /cpu .*cuda:0,1/);
  t.regex(h.fallbackReason!, /CUDA execution provider not installed/);
});

test('TensorRT asked for without its provider is an error even when CUDA is there', (t) => {
  t.throws(() => resolveExecution({ kind: 'cuda', ordinals: [0], tensorrt: true }, WITH_CUDA, false), { message: /TensorRT execution provider not installed/ });
});

test('bad device variables are refused naming the variable', (t) => {
  t.throws(() => deviceAssignmentFromEnv({ CORNSERVE_DEVICE_KIND: 'rocm' }), { message: /CORNSERVE_DEVICE_KIND/ });
  t.throws(() => deviceAssignmentFromEnv({ CORNSERVE_DEVICE_KIND: 'cuda', CORNSERVE_DEVICE_ORDINALS: '0,x' }), { message: /CORNSERVE_DEVICE_ORDINALS/ });
});

test('a rank beyond the assigned devices is refused', (t) => {
  const e = resolveExecution({ kind: 'cpu', ordinals: [0] }, CPU_ONLY, false);
  t.throws(() => sessionDevice(e, 1), { message: /rank 1 has no device/ });
});

test('an executor started without device variables runs every tensor-parallel rank on the CPU', (t) => {
  const e = resolveExecution(deviceAssignmentFromEnv({}), CPU_ONLY, false);
  t.deepEqual(sessionOptionsFor(sessionDevice(e, 1)).executionProviders, ['cpu']);
});
