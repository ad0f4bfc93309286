/**
 * The reference system's own benchmark workloads, in the simulator with device memory on (docs/experiment.md):
 *  - InternVL3-38B (run_compare): 1920×1080 images, 100 input / 300 output tokens, 5 req/s; monolithic (the
 *    encoder inside every LLM replica) against encoder + LLM, on A40 and A100, the LLM at TP 2;
 *  - the benchmark defaults (schema.py): 12 × A40, one 1920×1080 image per request, 500 / 500 tokens, 10 req/s;
 *  - Qwen2.5-VL-32B throughput (test_32b_tput): 8 GPUs, 4 LLMs at TP 2 against 3 at TP 2 + 2 encoders,
 *    1280×720, 300 / 300 tokens, 5 req/s.
 * Each is reported in two accountings: equal devices, and encoder devices not charged (the monolithic system
 * gets only the LLM replicas of the split, as the reference's "ignoring Eric cost" comparison does).
 * Prefill/decode disaggregation is not modelled by the simulator: those systems of run_compare are not run.
 */
import { parseScenario, type Scenario } from '../sim/scenario/schema.js';
import { simulate } from '../sim/run.js';
import { goodputOf, scenarioFor } from '../plan/goodput.js';
import type { Candidate } from '../plan/search.js';

const ENCODER = 'encoder:image';
const LLM = 'llm:cornserve/tiny-vlm-a';

export interface ReferenceWorkload {
  name: string;
  /** Where the reference defines it. */
  source: string;
  model: string;
  device: string;
  devices: number;
  llmTp: number;
  /** Encoder executors (1 device each) of the split system; the rest of the devices are LLM replicas at llmTp. */
  encoders: number;
  workload: { requestRate: number; inputLen: number; outputLen: number; imageSize: string };
}

export const REFERENCE_WORKLOADS: ReferenceWorkload[] = [
  { name: 'internvl3-38b/a40', source: 'benchmark/run_compare.py (on A40)', model: 'internvl3-38b', device: 'a40-48g', devices: 8, llmTp: 2, encoders: 2, workload: { requestRate: 5, inputLen: 100, outputLen: 300, imageSize: '1920x1080' } },
  { name: 'internvl3-38b/a100', source: 'benchmark/run_compare.py', model: 'internvl3-38b', device: 'a100-80g', devices: 8, llmTp: 2, encoders: 2, workload: { requestRate: 5, inputLen: 100, outputLen: 300, imageSize: '1920x1080' } },
  { name: 'defaults/12xa40', source: 'benchmark/schema.py defaults (model: Qwen2.5-VL-32B, our choice)', model: 'qwen2.5-vl-32b', device: 'a40-48g', devices: 12, llmTp: 2, encoders: 2, workload: { requestRate: 10, inputLen: 500, outputLen: 500, imageSize: '1920x1080' } },
  { name: 'qwen2.5-vl-32b-tput', source: 'test_32b_tput.py (on A40)', model: 'qwen2.5-vl-32b', device: 'a40-48g', devices: 8, llmTp: 2, encoders: 2, workload: { requestRate: 5, inputLen: 300, outputLen: 300, imageSize: '1280x720' } },
];

export interface ReferenceSystem {
  devices: number;
  replicas: Record<string, number>;
  goodput_rps: number;
  p99_e2el_ms: number | null;
  p99_ttft_ms: number | null;
  slo_attainment: number | null;
  /** Per LLM executor: KV-cache tokens, the most blocks held of the total, preemptions at the fixed rate. */
  kv_tokens: number;
  kv_peak_use: number;
  preemptions: number;
}

export interface ReferenceResult {
  workload: string;
  source: string;
  model: string;
  device: string;
  slo: string;
  fixed_rate_rps: number;
  systems: { monolithic: ReferenceSystem; split: ReferenceSystem; monolithic_llm_devices_only: ReferenceSystem };
  /** Equal devices: split ÷ monolithic (goodput; monolithic p99 E2EL ÷ split's). Encoders not charged: the same against the monolithic system on the split's LLM devices only. */
  equal_devices: { goodput: number; p99_e2el: number };
  encoders_not_charged: { goodput: number; p99_e2el: number };
}

/**
 * The SLO: 5 × the idle TTFT and TPOT of one request on the split system (DistServe's "SLO scale"), so that the
 * same rule fits a 38B model on A40 and on A100 without a number chosen per workload.
 */
const SLO_SCALE = 5;

function baseRaw(w: ReferenceWorkload, duration: number): Record<string, unknown> {
  return {
    name: w.name.replace(/\W+/g, '-'),
    cluster: { nodes: 1, devicesPerNode: w.devices, device: w.device },
    app: { file: 'experiment/apps/mllm-image.ts', api: 'chat' },
    workload: { ...w.workload, mix: 'image:1', duration, seed: 1 },
    memory: { model: w.model },
  };
}

const row = (devices: number, c: Candidate, goodput: number, out: Awaited<ReturnType<typeof simulate>>): ReferenceSystem => {
  const kv = out.memory?.[LLM];
  return {
    devices,
    replicas: c.replicas,
    goodput_rps: goodput,
    p99_e2el_ms: out.results.p99_e2el_ms as number | null,
    p99_ttft_ms: out.results.p99_ttft_ms as number | null,
    slo_attainment: out.results.slo_attainment as number | null,
    kv_tokens: kv?.kvTokens ?? 0,
    kv_peak_use: kv ? kv.maxBlocksUsed / kv.totalBlocks : 0,
    preemptions: kv?.preemptions ?? 0,
  };
};

export async function runReference(w: ReferenceWorkload, quick: boolean, log: (line: string) => void = () => {}): Promise<ReferenceResult> {
  const duration = quick ? 30 : 120;
  const tp = { [LLM]: w.llmTp };
  const splitLlms = Math.floor((w.devices - w.encoders) / w.llmTp);
  const systems = {
    monolithic: { devices: w.devices, c: { mode: 'monolithic', replicas: { [ENCODER]: 0, [LLM]: Math.floor(w.devices / w.llmTp) }, devicesPerExecutor: tp } as Candidate },
    split: { devices: w.devices, c: { mode: 'split', replicas: { [ENCODER]: w.encoders, [LLM]: splitLlms }, devicesPerExecutor: tp } as Candidate },
    monolithic_llm_devices_only: { devices: splitLlms * w.llmTp, c: { mode: 'monolithic', replicas: { [ENCODER]: 0, [LLM]: splitLlms }, devicesPerExecutor: tp } as Candidate },
  };
  // The SLO from one request on an idle split system.
  const probe = await parseScenario({ ...baseRaw(w, duration), workload: { ...w.workload, mix: 'image:1', numRequests: 1, seed: 1 } });
  const idle = (await simulate(scenarioFor(probe, systems.split.c), { itl: false })).results;
  const ttft = Number(idle.mean_ttft_ms);
  const tpot = Number(idle.mean_tpot_ms);
  const slo = `ttft_ms=${Math.ceil(SLO_SCALE * ttft)},tpot_ms=${Math.ceil(SLO_SCALE * tpot)}`;
  const sc: Scenario = await parseScenario({ ...baseRaw(w, duration), slo });
  const out = {} as ReferenceResult['systems'];
  const entries = Object.entries(systems) as Array<[keyof typeof systems, (typeof systems)[keyof typeof systems]]>;
  const goodputs = {} as Record<keyof typeof systems, number>;
  for (const [name, s] of entries) goodputs[name] = await goodputOf(sc, s.c, w.workload.requestRate);
  // The p99s at the monolithic system's goodput (where it is at its limit): the reference's own rates are above
  // every system's goodput here, where every tail is the queue's length.
  const fixedRate = goodputs.monolithic > 0 ? goodputs.monolithic : w.workload.requestRate;
  for (const [name, s] of entries) {
    out[name] = row(s.devices, s.c, goodputs[name], await simulate(scenarioFor(sc, s.c, fixedRate), { itl: false }));
    log(`  ${w.name}: ${name} (${Object.entries(s.c.replicas).filter(([, n]) => n > 0).map(([l, n]) => `${n} × ${l}`).join(', ')}, LLM TP ${w.llmTp}): goodput ${goodputs[name].toFixed(2)} req/s, KV ${out[name].kv_tokens} tokens per LLM`);
  }
  const ratio = (a: ReferenceSystem, m: ReferenceSystem) => ({
    goodput: m.goodput_rps > 0 ? a.goodput_rps / m.goodput_rps : Infinity,
    p99_e2el: m.p99_e2el_ms !== null && a.p99_e2el_ms ? m.p99_e2el_ms / a.p99_e2el_ms : 1,
  });
  return {
    workload: w.name, source: w.source, model: w.model, device: w.device, slo, fixed_rate_rps: fixedRate, systems: out,
    equal_devices: ratio(out.split, out.monolithic),
    encoders_not_charged: ratio(out.split, out.monolithic_llm_devices_only),
  };
}

const f = (v: number | null, d = 2) => (v === null ? '—' : v === Infinity ? '∞' : v.toFixed(d));

/** The two accountings side by side, one row per workload and system. */
export function referenceTable(results: readonly ReferenceResult[]): string {
  const lines = ['| workload | system | devices | goodput (req/s) | p99 E2EL at the fixed rate (ms) | KV tokens per LLM | KV peak use | preemptions |', '|---|---|---|---|---|---|---|---|'];
  for (const r of results) {
    for (const [name, s] of Object.entries(r.systems)) lines.push(`| ${r.workload} | ${name} | ${s.devices} | ${f(s.goodput_rps)} | ${f(s.p99_e2el_ms, 0)} | ${s.kv_tokens} | ${(s.kv_peak_use * 100).toFixed(0)}% | ${s.preemptions} |`);
  }
  lines.push('', '(fixed rate: the monolithic system\'s goodput, per workload below)', '', '| workload | SLO | fixed rate (req/s) | split ÷ monolithic, equal devices (goodput / p99 E2EL) | split ÷ monolithic, encoder devices not charged (goodput / p99 E2EL) |', '|---|---|---|---|---|');
  for (const r of results) lines.push(`| ${r.workload} | ${r.slo} | ${f(r.fixed_rate_rps)} | ${f(r.equal_devices.goodput)}× / ${f(r.equal_devices.p99_e2el)}× | ${f(r.encoders_not_charged.goodput)}× / ${f(r.encoders_not_charged.p99_e2el)}× |`);
  return lines.join('\n');
}
