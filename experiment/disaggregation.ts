/**
 * The disaggregation experiment: for each scenario (a real app file, a request mix, an arrival process, SLOs,
 * a device budget and a GPU preset), the simulator's goodput and tail latency of
 *  - monolithic: every replica holds every component (vLLM-Omni; a vLLM with its encoder inside),
 *  - disaggregated, static: the planner's best split (cornserve plan, monolithic excluded),
 *  - disaggregated with the autoscaler: the live Autoscaler (in the simulator's virtual time) starting from that
 *    split, as after `cornserve apply-plan`, with what an operator gives it after `cornserve profile`: each task's
 *    profile under the preset (sim/profile.ts; the capacity per executor the live CapacitySource reads from it) and
 *    a policy in flight per executor = the profile's saturation concurrency (2 s ticks, 10 s cold starts),
 *  - the "expert" splits a user would write: even, and proportional to each stage's work (FLOPs),
 * at an equal device count. Goodput = highest rate with ≥ 90% SLO attainment; p99s at one fixed rate (the
 * monolithic system's goodput, where it is at its limit).
 */
import { parseScenario, type Scenario } from '../sim/scenario/schema.js';
import { simulate } from '../sim/run.js';
import { demandFor } from '../plan/make.js';
import { goodputOf, scenarioFor, type GoodputPoint } from '../plan/goodput.js';
import { monolithicCandidate, screen, searchPlan, type Candidate } from '../plan/search.js';
import type { StageDemand } from '../plan/demand.js';
import type { RunResults } from '../bench/report/results.js';
import type { AutoscaleSettings } from '../sim/autoscale.js';
import { policyFromProfile, profileTasks } from '../sim/profile.js';
import type { TaskProfile } from '../lib/autoscale.js';
import { profileCapacityAt } from '../policies/capacity.js';

export interface ExperimentScenario {
  name: string;
  /** What the scenario shows, for the table. */
  about: string;
  raw: Record<string, unknown>;
  devices: number;
}

const PAPER_SHAPE = { inputLen: 200, outputLen: 300, rangeRatio: 0.5, imageSize: '1280x720', audioSeconds: 10, videoFrames: 2 };
const SLO = 'ttft_ms=3000,tpot_ms=100';
const cluster = { nodes: 1, devicesPerNode: 8, device: 'a100-80g' };

/** Arrival processes of the paper's harness: Poisson, gamma-bursty (shape 0.25), on/off (×4 / ÷4 every 10 s). */
export const ARRIVALS = {
  poisson: { burstiness: 1, pattern: 'constant' },
  gamma: { burstiness: 0.25, pattern: 'constant' },
  'on-off': { burstiness: 1, pattern: 'on-off:10:4' },
} as const;

export function scenarios(quick: boolean): ExperimentScenario[] {
  const duration = quick ? 30 : 120;
  const arrivals = quick ? (['poisson'] as const) : (Object.keys(ARRIVALS) as Array<keyof typeof ARRIVALS>);
  const out: ExperimentScenario[] = [];
  for (const a of arrivals) {
    const w = { ...PAPER_SHAPE, ...ARRIVALS[a], duration, seed: 1 };
    out.push(
      { name: `mllm/${a}`, about: 'MLLM (vision/audio/video encoders → LLM), heterogeneous mix', devices: 8, raw: { name: `mllm-${a}`, cluster, app: { file: 'functions/apps/mllm.ts', api: 'chat' }, workload: { ...w, mix: 'text:0.2,image:0.6,video:0.1,audio:0.1' }, slo: SLO } },
      { name: `any-to-any/${a}`, about: 'any-to-any (vision encoder → LLM → audio generator), audio back', devices: 8, raw: { name: `any-to-any-${a}`, cluster, app: { file: 'functions/apps/any-to-any.ts', api: 'chat', request: { return_audio: true } }, workload: { ...w, mix: 'text:0.4,image:0.6' }, slo: SLO } },
      { name: `image-variation/${a}`, about: 'image generation (vision encoder → image generator)', devices: 8, raw: { name: `image-variation-${a}`, cluster, app: { file: 'functions/apps/image-variation.ts', api: 'invoke', request: { image_url: 'data:,', width: 512, height: 512 } }, workload: { ...w, mix: 'image:1' }, slo: 'e2el_ms=3000' } },
    );
    if (!quick) out.push({ name: `text-only/${a}`, about: 'MLLM, text-only traffic (nothing to split off)', devices: 8, raw: { name: `text-only-${a}`, cluster, app: { file: 'functions/apps/mllm.ts', api: 'chat' }, workload: { ...w, mix: 'text:1' }, slo: SLO } });
  }
  return out;
}

/** Expert plans: devices split evenly over the stages, or in proportion to each stage's work (≈ its FLOPs). */
export function expertPlans(stages: readonly StageDemand[], devices: number): { even: Candidate; flops: Candidate } {
  const largestRemainder = (weights: number[]) => {
    const total = weights.reduce((a, b) => a + b, 0) || 1;
    const spare = devices - stages.length; // each stage gets one first
    const raw = weights.map((w) => (w / total) * spare);
    const n = raw.map(Math.floor);
    let left = spare - n.reduce((a, b) => a + b, 0);
    for (const i of raw.map((r, i) => [r - Math.floor(r), i] as const).sort((a, b) => b[0] - a[0]).map(([, i]) => i)) if (left-- > 0) n[i]!++;
    return Object.fromEntries(stages.map((s, i) => [s.label, 1 + n[i]!]));
  };
  return {
    even: { mode: 'split', replicas: largestRemainder(stages.map(() => 1)) },
    flops: { mode: 'split', replicas: largestRemainder(stages.map((s) => s.workMs)) },
  };
}

export interface SystemResult {
  replicas: Record<string, number>;
  goodput_rps: number;
  p99_ttft_ms: number | null;
  p99_e2el_ms: number | null;
  slo_attainment_at_fixed_rate: number | null;
  goodput_ratio_vs_monolithic?: number;
  p99_e2el_ratio_vs_monolithic?: number;
  /** The goodput search's runs (rate, attainment, throughput, goodput). */
  points: GoodputPoint[];
  /** Autoscaler system: executor-count changes in the run at the fixed rate. */
  scale_events_at_fixed_rate?: number;
  /** Autoscaler system: executors per label when the run at the fixed rate ended (it started from `replicas`). */
  replicas_at_end_of_fixed_run?: Record<string, number>;
  /** Autoscaler system: per label, the policy and the capacity per executor its profile gave (saturation point). */
  autoscale_inputs?: Record<string, { target: number; per_executor_rps: number; profile: Array<{ concurrency: number; throughput_rps: number; p99_ms: number }> }>;
  /** The run at the fixed rate (for latency CDFs). */
  fixed?: RunResults;
}

export interface ScenarioResult {
  scenario: string;
  about: string;
  devices: number;
  device: string;
  fixed_rate_rps: number;
  bottleneck: string;
  systems: Record<string, SystemResult>;
}

/**
 * The autoscaler system's settings: the live loop's tick and options (control/resources/autoscale-loop.ts), each
 * task's profile and the policy read off it (min 1, max the executors the pool holds, in flight per executor = the
 * saturation concurrency): the same inputs `cornserve profile` + `cornserve autoscale` give the live platform.
 */
export function autoscalerSettings(devices: number, profiles: Record<string, TaskProfile>, devicesPerExecutor: (label: string) => number = () => 1): AutoscaleSettings {
  const policies = Object.fromEntries(Object.entries(profiles).map(([label, p]) => [label, policyFromProfile(p, 1, Math.max(1, Math.floor(devices / devicesPerExecutor(label))))]));
  return { tickMs: 2000, coldStartMs: 10_000, policy: { min: 1, max: devices, target: 2 }, policies, profiles, options: {} };
}

async function measure(sc: Scenario, c: Candidate, guess: number, autoscaler?: AutoscaleSettings): Promise<SystemResult> {
  const points: GoodputPoint[] = [];
  const goodput = await goodputOf(sc, c, guess, { points, ...(autoscaler ? { autoscaler } : {}) });
  return { replicas: c.replicas, goodput_rps: goodput, p99_ttft_ms: null, p99_e2el_ms: null, slo_attainment_at_fixed_rate: null, points };
}

export async function runScenario(s: ExperimentScenario, log: (line: string) => void = () => {}): Promise<ScenarioResult> {
  const sc = await parseScenario(s.raw);
  const { demand } = await demandFor(sc);
  const systems: Record<string, SystemResult> = {};
  const mono = monolithicCandidate(demand.stages, s.devices);
  const stagesNoHosts = demand.stages;
  const evaluate = (c: Candidate & { screenRateRps: number }) => goodputOf(sc, c, c.screenRateRps * 0.8);
  // Fully split (every component on executors of its own), and the planner's free choice (it may keep some
  // encoders inside their host, or choose the monolithic plan).
  const split = await searchPlan({ demand, devices: s.devices, monolithic: false, colocate: false, fineCandidates: 3 }, evaluate);
  const planned = await searchPlan({ demand, devices: s.devices, fineCandidates: 3 }, evaluate);
  const experts = expertPlans(stagesNoHosts, s.devices);
  const profiles = await profileTasks(sc, Object.entries(split.best.replicas).filter(([, n]) => n > 0).map(([l]) => l));
  const autoscaler = autoscalerSettings(s.devices, profiles, (label) => demand.stages.find((x) => x.label === label)?.devicesPerExecutor ?? 1);
  const candidates: Array<[string, Candidate, AutoscaleSettings?]> = [
    ...(mono ? [['monolithic', mono] as [string, Candidate]] : []),
    ['disaggregated', split.best],
    ['autoscaler', split.best, autoscaler],
    ['planner', planned.best],
    ['expert-even', experts.even],
    ['expert-flops', experts.flops],
  ];
  const searched: Record<string, number> = { disaggregated: split.best.goodputRps, planner: planned.best.goodputRps };
  for (const [name, c, auto] of candidates) {
    systems[name] = searched[name] !== undefined ? { replicas: c.replicas, goodput_rps: searched[name]!, p99_ttft_ms: null, p99_e2el_ms: null, slo_attainment_at_fixed_rate: null, points: [] } : await measure(sc, c, screen(demand.stages, c).screenRateRps * 0.8, auto);
    log(`  ${s.name}: ${name} (${Object.entries(c.replicas).filter(([, n]) => n > 0).map(([l, n]) => `${n} × ${l}`).join(', ')}): goodput ${systems[name]!.goodput_rps.toFixed(2)} req/s`);
  }
  const base = systems.monolithic ?? systems.disaggregated!;
  const fixedRate = base.goodput_rps > 0 ? base.goodput_rps : 0.1;
  for (const [name, c, auto] of candidates) {
    const out = await simulate(scenarioFor(sc, c, fixedRate, auto), { itl: false });
    const r = systems[name]!;
    r.p99_ttft_ms = out.results.p99_ttft_ms as number | null;
    r.p99_e2el_ms = out.results.p99_e2el_ms as number | null;
    r.slo_attainment_at_fixed_rate = out.results.slo_attainment as number | null;
    r.fixed = out.results;
    if (auto) {
      r.autoscale_inputs = Object.fromEntries(Object.entries(auto.profiles ?? {}).map(([label, p]) => {
        const policy = auto.policies[label]!;
        const target = 'target' in policy ? policy.target : 0;
        return [label, { target, per_executor_rps: profileCapacityAt(p, policy)?.throughputRps ?? 0, profile: p.points.map((x) => ({ concurrency: x.concurrency, throughput_rps: x.throughputRps, p99_ms: x.p99Ms })) }];
      }));
      r.scale_events_at_fixed_rate = out.scaling.length;
      r.replicas_at_end_of_fixed_run = { ...c.replicas, ...Object.fromEntries(out.scaling.map((e) => [e.label, e.to])) };
    }
  }
  if (systems.monolithic) {
    const m = systems.monolithic;
    for (const [name, r] of Object.entries(systems)) {
      if (name === 'monolithic') continue;
      r.goodput_ratio_vs_monolithic = m.goodput_rps > 0 ? r.goodput_rps / m.goodput_rps : Infinity;
      r.p99_e2el_ratio_vs_monolithic = m.p99_e2el_ms !== null && r.p99_e2el_ms ? m.p99_e2el_ms / r.p99_e2el_ms : 1;
    }
  }
  return { scenario: s.name, about: s.about, devices: s.devices, device: sc.cluster.device, fixed_rate_rps: fixedRate, bottleneck: split.best.bottleneck, systems };
}
