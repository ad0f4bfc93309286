/**
 * An executor assigned GPUs on this machine, whose onnxruntime-node carries only the CPU provider (no GPU here):
 * it refuses to start naming the cause, or, with --allow-cpu-fallback, runs on the CPU and says so in /health.
 */
import test from 'ava';
import { EXECUTOR_ENV } from '../../../lib/descriptor.js';
import { startEric } from '../../helpers/eric.js';

const GPUS = { [EXECUTOR_ENV.deviceKind]: 'cuda', [EXECUTOR_ENV.deviceOrdinals]: '0' };

test('an executor assigned a GPU without the CUDA provider fails at start-up naming the cause', async (t) => {
  const err = await t.throwsAsync(startEric({ modality: 'image', env: GPUS }));
  t.regex(err!.message, /exited with 1/);
  t.regex(err!.message, /CUDA execution provider not installed/);
  t.regex(err!.message, /ONNXRUNTIME_NODE_INSTALL=cuda12/);
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
