/** Bounded memory on long runs: a cap on the per-request records kept, with the aggregates over every request. */
import test from 'ava';
import { parseScenario } from '../../../sim/scenario/schema.js';
import { simulate } from '../../../sim/run.js';
import { LATENCY_METRICS, PERCENTILES } from '../../../bench/metrics/aggregate.js';

const scenario = {
  name: 'small',
  cluster: { nodes: 1, devicesPerNode: 4, device: 'local-cpu', intraNode: 'local', interNode: 'local' },
  app: { file: 'functions/apps/mllm.ts', api: 'chat' },
  deployment: { replicas: { 'encoder:image': 1, 'llm:cornserve/tiny-vlm-a': 2 } },
  workload: { requestRate: 20, mix: 'text:0.5,image:0.5', inputLen: 64, outputLen: 16, rangeRatio: 0.5, imageSize: '64x64', numRequests: 300, seed: 3 },
  slo: 'ttft_ms=200',
};

test('a run with a record cap writes the same aggregates as one without, and only the capped records', async (t) => {
  const full = (await simulate(await parseScenario(scenario))).results;
  const capped = (await simulate(await parseScenario(scenario), { keepRecords: 50 })).results;
  t.is(capped.requests.length, 50);
  t.deepEqual(capped.requests.map((r) => r.index), [...Array(50).keys()], 'the first 50 by index');
  t.is(capped.requests_total, 300);
  t.is(full.requests.length, 300);
  t.is(full.requests_total, undefined, 'no cap reached: the results are exactly the bench writer’s');
  for (const k of ['completed', 'failed', 'total_input_tokens', 'total_output_tokens', 'duration', 'request_throughput', 'request_goodput', 'slo_attainment']) {
    t.is(capped[k], full[k], k);
  }
  const close = (k: string, rel: number) => {
    const a = capped[k] as number;
    const b = full[k] as number;
    t.true(Math.abs(a - b) <= rel * Math.abs(b) + 1e-9, `${k}: ${a} vs ${b}`);
  };
  for (const m of LATENCY_METRICS) {
    close(`mean_${m}_ms`, 1e-9);
    close(`std_${m}_ms`, 1e-6);
    close(`median_${m}_ms`, 1e-3); // HDR histogram precision (3 significant digits)
    for (const q of PERCENTILES) close(`p${q}_${m}_ms`, 1e-3);
  }
  t.not(capped.mean_e2el_ms, null);
});
