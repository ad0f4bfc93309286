/**
 * The "autoscaler" deployment mode: the live Autoscaler (control/autoscaler) decides in virtual time from the
 * simulated dispatcher's load, with cold starts and draining scale-downs.
 */
import test from 'ava';
import { parseScenario } from '../../../sim/scenario/schema.js';
import { simulate } from '../../../sim/run.js';

const LLM = 'llm:cornserve/tiny-vlm-a';
const stepScenario = {
  name: 'step',
  cluster: { nodes: 1, devicesPerNode: 8, device: 'local-cpu', intraNode: 'local', interNode: 'local' },
  app: { file: 'functions/apps/mllm.ts', api: 'chat' },
  deployment: { mode: 'autoscaler', autoscaler: { coldStartS: 5, options: { stableWindowMs: 20_000, scaleDownDelayMs: 10_000 } } },
  // 2 req/s, then 30 req/s from 60 s to 120 s, then 2 req/s again.
  // Fixed models (not the machine-fitted local-cpu preset, which is re-fitted from time to time): the step is
  // sized against these service times.
  models: {
    encoder: { a: 3.0, b: 0.05, patchSize: 16, audioUnitsPerSecond: 25, bytesPerUnit: 1024 },
    llm: { prefill: { a: 4.0, b: 0.02, c: 0 }, decode: { a: 2.5, b: 0.0005, c: 0.3 }, kvTokens: 16384, maxBatch: 32, maxPrefillTokens: 4096, padMultiple: 16 },
  },
  workload: { pattern: 'step:2,30,2:60', mix: 'text:0.5,image:0.5', inputLen: 64, outputLen: 16, imageSize: '64x64', duration: 240, seed: 5 },
};

test('a step in load makes the autoscaled deployment scale up and back down, the same way for the same seed', async (t) => {
  const a = await simulate(await parseScenario(stepScenario));
  const llm = a.scaling.filter((d) => d.label === LLM);
  const up = llm.find((d) => d.to > d.from);
  t.truthy(up, 'the LLM task scales up');
  t.true(up!.atMs >= 60_000 && up!.atMs < 120_000, `scale-up during the high step (at ${up!.atMs} ms)`);
  const down = llm.filter((d) => d.to < d.from);
  t.true(down.length > 0 && down.every((d) => d.atMs > 120_000), 'scale-downs only after the load falls');
  t.is(a.deployment.find((d) => d.label === LLM)!.executors, 1, 'back to the policy min at the end');
  t.deepEqual(a.invariants, { overCapacity: 0, startedBeforeProducers: 0, endedTwice: 0, neverEnded: 0 });
  const b = await simulate(await parseScenario(stepScenario));
  t.deepEqual(b.scaling, a.scaling);
  t.is(JSON.stringify(b.results), JSON.stringify(a.results));
});

test('autoscaler settings are refused outside the autoscaler mode', async (t) => {
  const e = await t.throwsAsync(async () => parseScenario({ ...stepScenario, deployment: { mode: 'manual', autoscaler: {} } }));
  t.regex(e!.message, /deployment\.autoscaler: only for mode autoscaler/);
});

test('the autoscaled deployment starts from the given replicas (a plan applied) and scales from there', async (t) => {
  const sc = await parseScenario({
    ...stepScenario,
    deployment: { ...stepScenario.deployment, replicas: { [LLM]: 3 } },
    workload: { ...stepScenario.workload, pattern: 'constant', requestRate: 1, duration: 60 },
  });
  const r = await simulate(sc);
  const llm = r.scaling.filter((d) => d.label === LLM);
  t.true(llm.length > 0, 'light load: the LLM task scales down');
  t.is(llm[0]!.from, 3);
  t.true(r.scaling.every((d) => Number.isInteger(d.from) && Number.isInteger(d.to)), JSON.stringify(r.scaling));
});
