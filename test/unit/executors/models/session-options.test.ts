import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROVIDER_LIBRARIES, providerFiles, type GpuProvider } from '../../../../executors/models/providers.js';
import {
  ExecutionProviderError, applyProbes, deviceAssignmentFromEnv, describeExecution, resolveExecution, sessionDevice, sessionOptionsFor,
} from '../../../../executors/models/session-options.js';

/** A binding folder holding `files` (empty files: only their presence is judged), removed after the test. */
function bindingFolder(t: { teardown: (f: () => void) => void }, files: readonly string[]): (p: GpuProvider) => ReturnType<typeof providerFiles> {
  const dir = mkdtempSync(join(tmpdir(), 'cs-ort-binding-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const f of ['libonnxruntime.so.1', 'onnxruntime_binding.node', ...files]) writeFileSync(join(dir, f), '');
  return (p) => providerFiles(p, dir);
}
const CPU_ONLY: readonly string[] = [];
const WITH_CUDA = PROVIDER_LIBRARIES.cuda;
const WITH_TRT = PROVIDER_LIBRARIES.tensorrt;

test('a CPU assignment builds the cpu provider with the thread count', (t) => {
  const e = resolveExecution(deviceAssignmentFromEnv({}), bindingFolder(t, CPU_ONLY), false);
  t.deepEqual(sessionOptionsFor(sessionDevice(e, 0, 2), { executionMode: 'sequential' }), {
    executionMode: 'sequential', intraOpNumThreads: 2, executionProviders: ['cpu'],
  });
});

test('with the CUDA libraries beside the binding, a CUDA assignment builds the cuda provider with the rank\'s ordinal', (t) => {
  const e = resolveExecution(deviceAssignmentFromEnv({ CORNSERVE_DEVICE_KIND: 'cuda', CORNSERVE_DEVICE_ORDINALS: '2,3' }), bindingFolder(t, WITH_CUDA), false);
  t.deepEqual(sessionOptionsFor(sessionDevice(e, 1)), { executionProviders: [{ name: 'cuda', deviceId: 3 }] });
  t.deepEqual(describeExecution(e), { provider: 'cuda', device: 'cuda:2,3', cpuFallback: false });
});

test('TensorRT goes first, then CUDA, on the same ordinal', (t) => {
  const env = { CORNSERVE_DEVICE_KIND: 'cuda', CORNSERVE_DEVICE_ORDINALS: '1', CORNSERVE_EXECUTION_PROVIDER: 'tensorrt' };
  const e = resolveExecution(deviceAssignmentFromEnv(env), bindingFolder(t, WITH_TRT), false);
  t.deepEqual(sessionOptionsFor(sessionDevice(e)).executionProviders, [{ name: 'tensorrt', deviceId: 1 }, { name: 'cuda', deviceId: 1 }]);
});

test('WebGPU chosen builds the webgpu provider, which needs no library beside the binding', (t) => {
  const e = resolveExecution(deviceAssignmentFromEnv({ CORNSERVE_DEVICE_KIND: 'cuda', CORNSERVE_EXECUTION_PROVIDER: 'webgpu' }), bindingFolder(t, CPU_ONLY), false);
  t.deepEqual(sessionOptionsFor(sessionDevice(e)).executionProviders, [{ name: 'webgpu' }]);
  t.is(describeExecution(e).device, 'webgpu:0');
});

test('a binding folder without the CUDA libraries refuses a CUDA assignment naming the files and the install command', (t) => {
  const err = t.throws(() => resolveExecution({ kind: 'cuda', ordinals: [0] }, bindingFolder(t, CPU_ONLY), false), { instanceOf: ExecutionProviderError })!;
  t.is(err.code, 'EXECUTION_PROVIDER_MISSING');
  t.deepEqual(err.details.missing, ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so']);
  t.regex(err.message, /cuda execution provider not installed: .*libonnxruntime_providers_cuda\.so/);
  t.regex(err.message, /ONNXRUNTIME_NODE_INSTALL=cuda12 npm ci/);
  t.regex(err.message, /--allow-cpu-fallback/);
});

test('the onnxruntime-node installed here has no CUDA libraries beside its binding, so a GPU assignment is refused', (t) => {
  const err = t.throws(() => resolveExecution({ kind: 'cuda', ordinals: [0] }, (p) => providerFiles(p), false), { instanceOf: ExecutionProviderError })!;
  t.is(err.code, 'EXECUTION_PROVIDER_MISSING');
});

test('with CPU fallback allowed, missing CUDA libraries run on the CPU and say so for /health', (t) => {
  const e = resolveExecution({ kind: 'cuda', ordinals: [0, 1] }, bindingFolder(t, CPU_ONLY), true);
  t.deepEqual(sessionOptionsFor(sessionDevice(e, 1)).executionProviders, ['cpu']);
  const h = describeExecution(e);
  t.like(h, { provider: 'cpu', cpuFallback: true });
  t.regex(h.device, /cpu .*cuda:0,1/);
  t.regex(h.fallbackReason!, /cuda execution provider not installed/);
});

test('TensorRT asked for without its library is refused even when CUDA\'s are there', (t) => {
  const err = t.throws(() => resolveExecution({ kind: 'cuda', ordinals: [0], provider: 'tensorrt' }, bindingFolder(t, WITH_CUDA), false), { instanceOf: ExecutionProviderError })!;
  t.deepEqual(err.details.missing, ['libonnxruntime_providers_tensorrt.so']);
});

test('a failed probe refuses the GPU with onnxruntime\'s error, the missing library and the fix', (t) => {
  const e = resolveExecution({ kind: 'cuda', ordinals: [0, 1] }, bindingFolder(t, WITH_CUDA), false);
  const probes = [
    { ok: true as const, provider: 'cuda' as const, ordinal: 0 },
    { ok: false as const, provider: 'cuda' as const, ordinal: 1, error: 'libcudnn.so.9: cannot open shared object file', missing: 'libcudnn.so.9', fix: 'install cuDNN 9' },
  ];
  const err = t.throws(() => applyProbes({ kind: 'cuda', ordinals: [0, 1] }, e, probes, false), { instanceOf: ExecutionProviderError })!;
  t.is(err.code, 'EXECUTION_PROVIDER_PROBE_FAILED');
  t.regex(err.message, /cannot run on device 1 \(missing: libcudnn\.so\.9\).*fix: install cuDNN 9/);
  const fallback = applyProbes({ kind: 'cuda', ordinals: [0, 1] }, e, probes, true);
  t.like(fallback, { provider: 'cpu', cpuFallback: true });
  t.regex(fallback.fallbackReason!, /libcudnn\.so\.9/);
});

test('probes that all pass keep the GPU execution', (t) => {
  const e = resolveExecution({ kind: 'cuda', ordinals: [0] }, bindingFolder(t, WITH_CUDA), false);
  t.is(applyProbes({ kind: 'cuda', ordinals: [0] }, e, [{ ok: true, provider: 'cuda', ordinal: 0 }], false), e);
});

test('bad device variables are refused naming the variable', (t) => {
  t.throws(() => deviceAssignmentFromEnv({ CORNSERVE_DEVICE_KIND: 'rocm' }), { message: /CORNSERVE_DEVICE_KIND/ });
  t.throws(() => deviceAssignmentFromEnv({ CORNSERVE_DEVICE_KIND: 'cuda', CORNSERVE_DEVICE_ORDINALS: '0,x' }), { message: /CORNSERVE_DEVICE_ORDINALS/ });
  t.throws(() => deviceAssignmentFromEnv({ CORNSERVE_DEVICE_KIND: 'cuda', CORNSERVE_EXECUTION_PROVIDER: 'rocm' }), { message: /CORNSERVE_EXECUTION_PROVIDER must be one of cuda, tensorrt, webgpu/ });
});

test('a rank beyond the assigned devices is refused', (t) => {
  const e = resolveExecution({ kind: 'cpu', ordinals: [0] }, bindingFolder(t, CPU_ONLY), false);
  t.throws(() => sessionDevice(e, 1), { message: /rank 1 has no device/ });
});

test('an executor started without device variables runs every tensor-parallel rank on the CPU', (t) => {
  const e = resolveExecution(deviceAssignmentFromEnv({}), bindingFolder(t, CPU_ONLY), false);
  t.deepEqual(sessionOptionsFor(sessionDevice(e, 1)).executionProviders, ['cpu']);
});
