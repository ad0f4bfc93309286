import test from 'ava';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PROVIDER_LIBRARIES, diagnoseProbeFailure, ortBindingDir, providerFiles } from '../../../../executors/models/providers.js';

function folderWith(t: { teardown: (f: () => void) => void }, files: readonly string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'cs-ort-binding-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const f of files) writeFileSync(join(dir, f), '');
  return dir;
}

test('the binding folder is the installed onnxruntime-node\'s, the one holding onnxruntime_binding.node', (t) => {
  t.true(existsSync(join(ortBindingDir(), 'onnxruntime_binding.node')));
  t.true(existsSync(join(ortBindingDir(), 'libonnxruntime.so.1')));
});

test('the CUDA provider counts as installed only when both of its libraries are in the binding folder', (t) => {
  t.like(providerFiles('cuda', folderWith(t, ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'])), { installed: true, missing: [] });
  const half = providerFiles('cuda', folderWith(t, ['libonnxruntime_providers_cuda.so']));
  t.like(half, { installed: false, found: ['libonnxruntime_providers_cuda.so'], missing: ['libonnxruntime_providers_shared.so'] });
  t.like(providerFiles('cuda', folderWith(t, [])), { installed: false, found: [] });
});

test('TensorRT needs its own library besides CUDA\'s', (t) => {
  const dir = folderWith(t, PROVIDER_LIBRARIES.cuda);
  t.deepEqual(providerFiles('tensorrt', dir).missing, ['libonnxruntime_providers_tensorrt.so']);
});

test('the libraries judged are the ones onnxruntime-node\'s own install manifest puts beside the binding', (t) => {
  const pkg = dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
  const metadata = createRequire(import.meta.url)(join(pkg, 'script', 'install-metadata.js')) as { manifests: Record<string, Record<string, unknown>> };
  const installed = Object.keys(metadata.manifests['linux/x64:cuda12']!).map((f) => f.replace(/^\.\//, '')).sort();
  t.deepEqual([...new Set([...PROVIDER_LIBRARIES.cuda, ...PROVIDER_LIBRARIES.tensorrt])].sort(), installed);
});

test('a missing CUDA runtime library is named with the CUDA runtime fix', (t) => {
  const d = diagnoseProbeFailure('cuda', 'Failed to load library libonnxruntime_providers_cuda.so with error: libcublasLt.so.12: cannot open shared object file: No such file or directory');
  t.is(d.missing, 'libcublasLt.so.12');
  t.regex(d.fix, /CUDA 12 runtime/);
});

test('a missing cuDNN is named with the cuDNN fix', (t) => {
  const d = diagnoseProbeFailure('cuda', 'libcudnn.so.9: cannot open shared object file: No such file or directory');
  t.is(d.missing, 'libcudnn.so.9');
  t.regex(d.fix, /cuDNN 9/);
});

test('a missing driver library is named with the driver fix', (t) => {
  t.regex(diagnoseProbeFailure('cuda', 'libcuda.so.1: cannot open shared object file').fix, /NVIDIA driver/);
});

test('a missing provider library points to the onnxruntime-node CUDA install', (t) => {
  const d = diagnoseProbeFailure('tensorrt', '/x/libonnxruntime_providers_shared.so: cannot open shared object file');
  t.is(d.missing, 'libonnxruntime_providers_shared.so');
  t.regex(d.fix, /ONNXRUNTIME_NODE_INSTALL=cuda12 npm ci/);
});

test('WebGPU without a Vulkan loader asks for libvulkan1 and a driver', (t) => {
  const d = diagnoseProbeFailure('webgpu', "Failed to get a WebGPU adapter: No supported adapters | Warning: Couldn't load Vulkan: libvulkan.so.1: cannot open shared object file");
  t.is(d.missing, 'libvulkan.so.1');
  t.regex(d.fix, /libvulkan1/);
});

test('WebGPU refused by Dawn (software Vulkan) asks for a GPU\'s Vulkan driver', (t) => {
  const d = diagnoseProbeFailure('webgpu', 'Warning: Vulkan shaderUniform*ArrayDynamicIndexing required. - While initializing adapter (backend=BackendType::Vulkan)');
  t.is(d.missing, 'a Vulkan GPU adapter Dawn accepts');
  t.regex(d.fix, /lavapipe is refused/);
});
