/** Tensor parallelism in the simulator: an executor on k× its task's devices runs with the TP latency factors. */
import test from 'ava';
import { parseScenario } from '../../../sim/scenario/schema.js';
import { simulate } from '../../../sim/run.js';
import { modelsAtTp, TP_FACTORS } from '../../../sim/latency/tensor-parallel.js';

const LLM = 'llm:cornserve/tiny-vlm-a';
const scenario = (tp: number) => ({
  name: `tp${tp}`,
  cluster: { nodes: 1, devicesPerNode: 8, device: 'a100-80g' },
  app: { file: 'functions/apps/mllm.ts', api: 'chat' },
  // A plan (as cornserve plan writes one with TP): one LLM executor on `tp` devices (text only: the app calls no encoder).
  deployment: {
    mode: 'plan',
    plan: {
      version: 1, app: 'mllm', device: 'a100-80g', cluster: { nodes: 1, devicesPerNode: 8 }, mode: 'split',
      components: [{ label: LLM, stage: 'llm', replicas: 1, devicesPerExecutor: tp }],
      placement: [{ node: 0, label: LLM, executors: 1 }],
      explanation: { screenRateRps: 1, goodputRps: null, bottleneck: LLM, headroom: {} },
    },
  },
  // Light load: one request at a time, so TTFT is the prefill itself.
  workload: { mix: 'text:1', inputLen: 2000, outputLen: 8, requestRate: 0.2, numRequests: 20, seed: 3 },
});

test('an LLM executor at tensor-parallel 2 prefills faster than at TP1, by the TP factor', async (t) => {
  const one = await simulate(await parseScenario(scenario(1)), { itl: false });
  const two = await simulate(await parseScenario(scenario(2)), { itl: false });
  t.is(two.deployment.find((d) => d.label === LLM)!.executors, 1);
  const ratio = (two.results.median_ttft_ms as number) / (one.results.median_ttft_ms as number);
  // The prefill scales by the large-batch factor; the platform's per-request overhead does not.
  t.true(ratio < 0.7 && ratio >= TP_FACTORS.large[2]! - 0.01, `TTFT TP2 ÷ TP1 = ${ratio}`);
});

test('the TP models scale prefill and encoder by the large-batch factor, decode by the small one, KV capacity by the degree', (t) => {
  const base = { encoder: { a: 10, b: 1, patchSize: 14, audioUnitsPerSecond: 50, bytesPerUnit: 1 }, llm: { prefill: { a: 10, b: 1, c: 0 }, decode: { a: 20, b: 1, c: 1 }, kvTokens: 1000, kvBlockSize: 16, maxBatch: 32, maxPrefillTokens: 4096, padMultiple: 1, bytesPerToken: 0 } };
  const llm = modelsAtTp(base, 'llm', 4).llm!;
  t.is(llm.prefill.a, 10 * TP_FACTORS.large[4]!);
  t.is(llm.decode.a, 20 * TP_FACTORS.small[4]!);
  t.is(llm.kvTokens, 4000);
  t.is(modelsAtTp(base, 'encoder', 2).encoder!.b, TP_FACTORS.large[2]!);
  t.throws(() => modelsAtTp(base, 'llm', 3), { message: /degree 3 has no latency factor/ });
});
