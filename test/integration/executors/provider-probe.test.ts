/**
 * The start-up probe of a GPU execution provider, run for real on this machine (no GPU, no CUDA libraries, no
 * Vulkan GPU adapter): each refusal carries onnxruntime's own error, what is missing and the fix; a probe process
 * that crashes or hangs ends as the same kind of refusal, within its bound.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { probeProvider } from '../../../executors/models/provider-probe.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../helpers/fixtures/${name}`, import.meta.url));

test('the CUDA probe fails here with onnxruntime\'s error naming the provider library it could not load and the install command', async (t) => {
  const r = await probeProvider('cuda', 0);
  if (r.ok) return t.fail('the CUDA probe passed on a machine without CUDA');
  t.is(r.missing, 'libonnxruntime_providers_shared.so');
  t.regex(r.error, /Failed to load (shared )?library/);
  t.regex(r.error, /libonnxruntime_providers_shared\.so: cannot open shared object file/);
  t.regex(r.fix, /ONNXRUNTIME_NODE_INSTALL=cuda12 npm ci/);
});

test('the WebGPU probe is refused here with Dawn\'s reason and a Vulkan fix', async (t) => {
  const r = await probeProvider('webgpu', 0);
  if (r.ok) return t.fail('the WebGPU probe passed on a machine without a Vulkan GPU');
  t.regex(r.error, /Failed to get a WebGPU adapter/);
  // Without libvulkan1 Dawn cannot load Vulkan; with Debian's libvulkan1 + mesa-vulkan-drivers it refuses lavapipe.
  if (/libvulkan\.so\.1: cannot open/.test(r.error)) {
    t.is(r.missing, 'libvulkan.so.1');
    t.regex(r.fix, /apt-get install libvulkan1/);
  } else {
    t.regex(r.error, /Vulkan shaderUniform\*ArrayDynamicIndexing required/);
    t.is(r.missing, 'a Vulkan GPU adapter Dawn accepts');
    t.regex(r.fix, /lavapipe is refused/);
  }
});

test('a probe process that crashes is a refusal naming the signal', async (t) => {
  const r = await probeProvider('cuda', 0, { script: fixture('probe-crash.ts') });
  if (r.ok) return t.fail('a crashed probe passed');
  t.regex(r.error, /the probe process crashed \(SIGABRT\)/);
  t.regex(r.error, /probe-crash fixture: aborting/);
});

test('a probe process that hangs is killed at its bound and refused', async (t) => {
  const r = await probeProvider('cuda', 1, { script: fixture('probe-hang.ts'), timeoutMs: 3_000 });
  if (r.ok) return t.fail('a hung probe passed');
  t.is(r.ordinal, 1);
  t.regex(r.error, /did not finish within 3000 ms/);
});
