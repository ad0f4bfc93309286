/**
 * An executor assigned GPUs on this machine, whose onnxruntime-node has no CUDA libraries and no Vulkan GPU to run
 * WebGPU on (no GPU here): it refuses to start with a code naming the missing file or library and the fix, or,
 * with --allow-cpu-fallback, runs on the CPU and says so in /health.
 */
import test from 'ava';
import { EXECUTOR_ENV } from '../../../lib/descriptor.js';
import { startEric } from '../../helpers/eric.js';

const GPUS = { [EXECUTOR_ENV.deviceKind]: 'cuda', [EXECUTOR_ENV.deviceOrdinals]: '0' };

test('an executor assigned a GPU without the CUDA provider\'s libraries fails at start-up naming them and the install command', async (t) => {
  const err = await t.throwsAsync(startEric({ modality: 'image', env: GPUS }));
  t.regex(err!.message, /exited with 1/);
  t.regex(err!.message, /EXECUTION_PROVIDER_MISSING: cuda execution provider not installed: .*libonnxruntime_providers_cuda\.so/);
  t.regex(err!.message, /ONNXRUNTIME_NODE_INSTALL=cuda12 npm ci/);
});

test('an executor asked to use WebGPU where no Vulkan GPU exists fails its start-up probe with Dawn\'s reason and a Vulkan fix', async (t) => {
  const err = await t.throwsAsync(startEric({ modality: 'image', env: { ...GPUS, CORNSERVE_EXECUTION_PROVIDER: 'webgpu' } }));
  t.regex(err!.message, /exited with 1/);
  t.regex(err!.message, /EXECUTION_PROVIDER_PROBE_FAILED: webgpu execution provider cannot run on device 0/);
  t.regex(err!.message, /Failed to get a WebGPU adapter/);
  t.regex(err!.message, /fix: .*Vulkan/);
});

test('with --allow-cpu-fallback it runs on the CPU and /health says GPUs were asked for', async (t) => {
  const eric = await startEric({ modality: 'image', env: GPUS, args: ['--allow-cpu-fallback'] });
  t.teardown(() => eric.stop());
  const body = (await (await fetch(`${eric.url}/health`)).json()) as { execution: Record<string, unknown> };
  t.like(body.execution, { provider: 'cpu', cpuFallback: true });
  t.regex(String(body.execution.device), /cpu .*cuda:0/);
});

test('an executor assigned CPU devices reports the cpu provider in /health', async (t) => {
  const eric = await startEric({ modality: 'image' });
  t.teardown(() => eric.stop());
  const body = (await (await fetch(`${eric.url}/health`)).json()) as { execution: Record<string, unknown> };
  t.deepEqual(body.execution, { provider: 'cpu', device: 'cpu', cpuFallback: false });
});
