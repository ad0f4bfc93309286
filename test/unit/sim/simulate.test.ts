/**
 * Whole simulated runs of small scenarios: the mllm app (recorded from functions/apps/mllm.ts) on a 1 × 4
 * cluster, and the scenario checks that refuse bad input before a run.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseScenario } from '../../../sim/scenario/schema.js';
import { simulate } from '../../../sim/run.js';
import { simulateCommand } from '../../../sim/command.js';
import { LATENCY_METRICS, PERCENTILES } from '../../../bench/metrics/aggregate.js';
import { TIMELINE_POINTS } from '../../../bench/metrics/timeline.js';

const base = {
  name: 'small',
  cluster: { nodes: 1, devicesPerNode: 4, device: 'local-cpu', intraNode: 'local', interNode: 'local' },
  app: { file: 'functions/apps/mllm.ts', api: 'chat' },
  deployment: { replicas: { 'encoder:image': 1, 'llm:cornserve/tiny-vlm-a': 2 } },
  workload: { requestRate: 20, mix: 'text:0.5,image:0.5', inputLen: 64, outputLen: 16, rangeRatio: 0.5, imageSize: '64x64', numRequests: 300, seed: 3 },
  slo: 'ttft_ms=200',
};
const withOverrides = (o: Record<string, unknown>) => ({ ...base, ...o });

test('the same seed gives identical results', async (t) => {
  const a = await simulate(await parseScenario(base));
  const b = await simulate(await parseScenario(base));
  t.is(JSON.stringify(a.results), JSON.stringify(b.results));
  const c = await simulate(await parseScenario(base, { seed: 4 }));
  t.not(JSON.stringify(a.results), JSON.stringify(c.results), 'another seed, another run');
});

test('every request ends exactly once, after its producers, on executors within their capacity', async (t) => {
  const o = await simulate(await parseScenario(withOverrides({ workload: { ...base.workload, requestRate: 200 } })));
  t.deepEqual(o.invariants, { overCapacity: 0, startedBeforeProducers: 0, endedTwice: 0, neverEnded: 0 });
  t.is(o.results.completed, 300);
  t.is(new Set((o.results.requests as Array<{ index: number }>).map((r) => r.index)).size, 300);
  for (const r of o.results.requests) t.true(r.ttftMs! <= r.e2elMs!, 'the first token comes before the end');
});

test('the deployment uses the app file’s own tasks, recorded through the SDK', async (t) => {
  const o = await simulate(await parseScenario(base));
  t.deepEqual(o.deployment.map((d) => [d.label, d.executors]).sort(), [['encoder:image', 1], ['llm:cornserve/tiny-vlm-a', 2]]);
  t.regex(o.deployment.find((d) => d.stage === 'llm')!.taskId, /^llmbasetask-[0-9a-f]{12}$/);
});

test('bad scenarios are refused before the run with the field named', async (t) => {
  const refused = async (raw: unknown, field: RegExp) => {
    const e = await t.throwsAsync(async () => simulate(await parseScenario(raw)));
    t.regex(e!.message, field);
  };
  await refused(withOverrides({ cluster: { ...base.cluster, device: 'tpu-v9' } }), /cluster\.device: unknown preset 'tpu-v9'/);
  await refused(withOverrides({ deployment: { replicas: { 'llm:nope': 1 } } }), /deployment\.replicas\.llm:nope: the app has no such task/);
  await refused(withOverrides({ app: { file: 'functions/apps/missing.ts' } }), /app\.file: cannot read app file/);
  await refused(withOverrides({ models: { llm: { decode: { a: -50, b: 0, c: 0 } } } }), /models.*llm\.decode: the latency model gives -?\d+(\.\d+)? ms/);
  await refused(withOverrides({ models: { encoder: { a: Number.NaN } } }), /models\.encoder/);
  // positive at 1 and at 4096 tokens, negative around 100 (a fit on a loaded machine gave this shape)
  await refused(withOverrides({ models: { llm: { prefill: { a: 58.3, b: -1.2, c: 0.0058 } } } }), /models.*llm\.prefill: the latency model gives -\d+(\.\d+)? ms for Σtokens 10[0-9]/);
  await refused(withOverrides({ cluster: { ...base.cluster, devicesPerNode: 2 } }), /cluster: 1 × 2 devices cannot hold the deployment/);
  await refused(withOverrides({ workload: { ...base.workload, mix: 'text:1,smell:1' } }), /workload: --mix: unknown kind 'smell'/);
  await refused(withOverrides({ workload: { ...base.workload, rate: 3 } }), /workload\.rate: unknown option/);
});

test('`cornserve simulate` writes results.json with the bench keys, summary.md and the plots', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cornserve-sim-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out: string[] = [];
  const err: string[] = [];
  await simulateCommand({ out: (l) => out.push(l), err: (l) => err.push(l) }).exitOverride().parseAsync(['--scenario', 'local-1x4', '--duration', '5', '--result-dir', dir], { from: 'user' });
  const r = JSON.parse(readFileSync(join(dir, 'results.json'), 'utf8')) as Record<string, unknown>;
  for (const key of ['completed', 'failed', 'request_throughput', 'output_throughput', 'mean_ttft_ms', 'median_e2el_ms', 'p99_e2el_ms', 'p99_itl_ms', 'mean_tpot_ms', 'slo_attainment', 'request_goodput', 'input_lens', 'ttfts', 'requests']) t.true(key in r, key);
  t.true((r.completed as number) > 0);
  t.true(out.join('\n').includes('Serving Benchmark Result'));
  t.true(readFileSync(join(dir, 'summary.md'), 'utf8').includes('latency-cdf.svg'));
  t.true(readFileSync(join(dir, 'latency-cdf.png')).length > 1000);
  t.regex(err.join('\n'), /requests per wall-clock second/);
});

test('a run with a record cap writes the same aggregates as one without, and only the capped records', async (t) => {
  const full = (await simulate(await parseScenario(base))).results;
  const capped = (await simulate(await parseScenario(base), { keepRecords: 50 })).results;
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

test('a capped run still plots its whole timeline, in a bounded number of points', async (t) => {
  const sc = await parseScenario(base);
  const capped = (await simulate(sc, { keepRecords: 10 })).results;
  const timeline = capped.in_flight_timeline as Array<{ tS: number; inFlight: number }>;
  t.true(timeline.length <= TIMELINE_POINTS, `${timeline.length} points`);
  const lastSendS = Math.max(...(await simulate(sc)).results.requests.map((r) => r.sentMs)) / 1000;
  t.true(timeline.at(-1)!.tS >= lastSendS * 0.9, `the timeline reaches ${timeline.at(-1)!.tS} s of a run whose last request was sent at ${lastSendS} s (the 10 kept records end far earlier)`);
  t.true(timeline.some((p) => p.inFlight > 0));
});

/** The echo app with 200 ms of sleep per request (2 at once), and `workMs` of its executor's own CPU work. */
const echoWork = (o: { cores?: number; workMs: number; devices: number; overheadMs?: number }) => ({
  name: 'echo-timed',
  overheadMs: o.overheadMs ?? 0,
  cluster: { nodes: 1, devicesPerNode: o.devices, device: 'a100-80g', intraNode: 'local', interNode: 'local', ...(o.cores !== undefined ? { cores: o.cores } : {}) },
  app: { file: 'test/fixtures/apps/echo-timed.ts', api: 'invoke', request: { text: 'hi' } },
  deployment: { default: o.devices },
  models: { echo: { a: o.workMs } },
  // 4 requests at once (an infinite rate sends them all at 0): 2 executors × 2 at once, so no request queues.
  workload: { requestRate: 'inf', numRequests: 4, seed: 1 },
});

test('on shared cores, busy executors slow each other by the cores they share; independent devices do not', async (t) => {
  const e2el = async (raw: unknown) => (await simulate(await parseScenario(raw))).results.requests.map((r) => r.e2elMs!);
  // 4 requests, each 100 ms of CPU work then a 200 ms sleep (no core): alone 300 ms.
  t.deepEqual(await e2el(echoWork({ workMs: 100, devices: 2 })), [300, 300, 300, 300]);
  // 4 at once on 2 cores: the CPU part runs at half speed (200 ms), the sleep is unchanged.
  t.deepEqual(await e2el(echoWork({ workMs: 100, devices: 2, cores: 2 })), [400, 400, 400, 400]);
  // as many cores as busy executors: no slowdown.
  t.deepEqual(await e2el(echoWork({ workMs: 100, devices: 2, cores: 4 })), [300, 300, 300, 300]);
});

test('the per-request hop runs on the gateway node’s shared cores, so it queues with the executors’ work', async (t) => {
  const e2el = async (raw: unknown) => (await simulate(await parseScenario(raw))).results.requests.map((r) => r.e2elMs!);
  // 4 hops of 10 ms at once on 1 core: all end at 40 ms; then 4 × 100 ms of work on that core (400 ms more), then the sleep.
  t.deepEqual(await e2el(echoWork({ workMs: 100, devices: 2, cores: 1, overheadMs: 10 })), [640, 640, 640, 640]);
  // Independent devices: the hop is a fixed delay.
  t.deepEqual(await e2el(echoWork({ workMs: 100, devices: 2, overheadMs: 10 })), [310, 310, 310, 310]);
});

test('a preset’s host block gives the shared cores and the per-request and per-invocation costs; a scenario overrides them', async (t) => {
  const presets = await (await import('../../../sim/scenario/schema.js')).loadPresets();
  const local = presets['local-cpu']!;
  const sc = await parseScenario({ name: 'x', cluster: { nodes: 1, devicesPerNode: 2, device: 'local-cpu' }, app: { file: 'functions/apps/mllm.ts' } });
  t.is(sc.cluster.cores, local.host?.cores);
  t.is(sc.overheadMs, local.host?.requestMs ?? 1.29);
  t.is(sc.invocationOverheadMs, local.host?.invocationMs ?? 0);
  const over = await parseScenario({ name: 'x', overheadMs: 3, cluster: { nodes: 1, devicesPerNode: 2, device: 'local-cpu', cores: 8 }, app: { file: 'functions/apps/mllm.ts' } });
  t.is(over.cluster.cores, 8);
  t.is(over.overheadMs, 3);
  // A measured overhead above the preset's host cost: only the host cost is CPU work, the rest is waiting (a delay).
  const busy = await parseScenario({ name: 'x', overheadMs: 1000, cluster: { nodes: 1, devicesPerNode: 2, device: 'local-cpu' }, app: { file: 'functions/apps/mllm.ts' } });
  t.is(busy.overheadCpuMs, local.host ? local.host.requestMs : 1000);
  const gpu = await parseScenario({ name: 'x', cluster: { nodes: 1, devicesPerNode: 2, device: 'a100-80g' }, app: { file: 'functions/apps/mllm.ts' } });
  t.is(gpu.cluster.cores, undefined, 'GPU presets: independent devices');
  t.is(gpu.invocationOverheadMs, 0);
  t.is(gpu.overheadCpuMs, gpu.overheadMs, 'no host block: all of the hop is work (on shared cores, if a scenario gives them)');
  await t.throwsAsync(async () => parseScenario({ name: 'x', cluster: { nodes: 1, devicesPerNode: 2, device: 'a100-80g', cores: 0 }, app: { file: 'functions/apps/mllm.ts' } }), { message: /cluster\.cores/ });
});
