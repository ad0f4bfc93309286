/**
 * The planner's search, coarse to fine. Pure: the fine step's evaluator (the simulator's goodput search in
 * `cornserve plan`, an exact function in tests) is injected.
 *  1. Infeasibility: a request kind that is more than 10% of the mix and misses an SLO on an idle system
 *     cannot reach 90% attainment whatever the plan; a budget that cannot hold one executor per stage.
 *  2. Screen: every split (executors per label, all ≥ 1, within the device budget) and the monolithic plan
 *     (encoders inside their LLM executors), ranked by capacity ÷ demand of their bottleneck stage.
 *  3. Fine: the top candidates (and the monolithic one) are evaluated; the highest goodput wins.
 * Tensor parallelism: each variant (devices per executor per label, with the demand its latency models give) is
 * checked and screened like the base; the fine step also evaluates each feasible variant's best split, since a
 * TP plan has less capacity per device (the screen's measure) but lower latency (what SLOs count).
 */
import type { Slo } from '../bench/metrics/slo.js';
import type { Demand, StageDemand } from './demand.js';
import { PlanError } from '../lib/plan.js';

export interface Candidate {
  mode: 'split' | 'monolithic';
  /** Executors per label (monolithic: encoder labels 0). */
  replicas: Record<string, number>;
  /** Devices per executor per label, where a tensor-parallel variant changes the task's own. */
  devicesPerExecutor?: Record<string, number>;
}

/** A tensor-parallel variant of the plan space: devices per executor per label and the demand at those degrees. */
export interface TpVariant {
  devicesPerExecutor: Record<string, number>;
  demand: Demand;
}

export interface Screened extends Candidate {
  /** Highest rate the stages' capacities allow, req/s. */
  screenRateRps: number;
  bottleneck: string;
  /** Capacity per label, req/s. */
  capacityRps: Record<string, number>;
}

export interface SearchInput {
  demand: Demand;
  devices: number;
  slo?: Slo;
  /** A rate the plan must sustain (req/s); above every candidate's screen rate → infeasible. */
  minRateRps?: number;
  /** Candidates simulated after the screen. @default 4 */
  fineCandidates?: number;
  /** Also consider the monolithic plan. @default true */
  monolithic?: boolean;
  /** Also consider plans that keep some encoders inside their host (0 executors of their own). @default true */
  colocate?: boolean;
  /** Tensor-parallel variants searched besides `demand` (plan/make.ts tpVariants). */
  variants?: TpVariant[];
}

export interface Evaluated extends Screened { goodputRps: number }

export interface SearchResult {
  best: Evaluated;
  evaluated: Evaluated[];
  screened: number;
  /** Capacity ÷ demand at the best plan's goodput, per label. */
  headroom: Record<string, number>;
}

/** The SLO attainment a plan must reach (goodput's definition). */
const ATTAINMENT = 0.9;

export class InfeasiblePlanError extends PlanError {
  constructor(message: string, readonly stage: string) {
    super(message);
  }
}

const inlined = (s: StageDemand, c: Candidate) => s.stage === 'encoder' && s.hostLabel !== undefined && (c.mode === 'monolithic' || c.replicas[s.label] === 0);

/** Work per label: an encoder run inside its host (monolithic, or 0 executors of its own) adds its work to the host. */
function workUnder(stages: readonly StageDemand[], c: Candidate): Map<string, number> {
  const w = new Map<string, number>();
  for (const s of stages) w.set(s.label, (w.get(s.label) ?? 0) + (inlined(s, c) ? 0 : s.workMs));
  for (const s of stages) if (inlined(s, c)) w.set(s.hostLabel!, (w.get(s.hostLabel!) ?? 0) + s.workMs);
  return w;
}

export function screen(stages: readonly StageDemand[], c: Candidate): Screened {
  const work = workUnder(stages, c);
  const devicesPer = new Map(stages.map((st) => [st.label, st.devicesPerExecutor]));
  const capacityRps: Record<string, number> = {};
  let bottleneck = '';
  let rate = Infinity;
  for (const [label, ms] of work) {
    const r = c.replicas[label] ?? 0;
    if (r === 0) continue;
    // Work is device-ms per request: a label's r executors of d devices give r·d device-seconds per second.
    const cap = ms > 0 ? (r * (devicesPer.get(label) ?? 1) * 1000) / ms : Infinity;
    capacityRps[label] = cap;
    if (cap < rate) { rate = cap; bottleneck = label; }
  }
  return { ...c, screenRateRps: rate, bottleneck, capacityRps };
}

/**
 * Every vector of executors per label (each ≥ 1; an encoder with a host also 0 when `colocate`: it then runs
 * inside its host, a partly colocated plan) whose devices fit the budget and that no label could grow.
 */
export function splits(stages: readonly StageDemand[], devices: number, colocate = false): Array<Record<string, number>> {
  const out: Array<Record<string, number>> = [];
  const rec = (i: number, left: number, acc: Record<string, number>) => {
    if (i === stages.length) {
      if (stages.every((s) => s.devicesPerExecutor > left)) out.push({ ...acc }); // maximal: no device left over for any label
      return;
    }
    const s = stages[i]!;
    const min = (x: StageDemand) => (colocate && x.stage === 'encoder' && x.hostLabel ? 0 : 1);
    const restMin = stages.slice(i + 1).reduce((a, x) => a + min(x) * x.devicesPerExecutor, 0);
    for (let r = min(s); r * s.devicesPerExecutor + restMin <= left; r++) rec(i + 1, left - r * s.devicesPerExecutor, { ...acc, [s.label]: r });
  };
  rec(0, devices, {});
  return out;
}

/**
 * Monolithic, as vLLM-Omni or a vLLM with its encoder inside: every replica holds every component of the model
 * (one executor of each non-encoder stage, the encoders inside their host), so all stages get the same number
 * of executors: as many replicas as the devices hold.
 */
export function monolithicCandidate(stages: readonly StageDemand[], devices: number): Candidate | null {
  const hosts = stages.filter((s) => !(s.stage === 'encoder' && s.hostLabel));
  const perReplica = hosts.reduce((a, s) => a + s.devicesPerExecutor, 0);
  const n = Math.floor(devices / perReplica);
  if (n < 1) return null;
  return { mode: 'monolithic', replicas: Object.fromEntries(stages.map((s) => [s.label, hosts.includes(s) ? n : 0])) };
}

function checkFeasible(input: SearchInput): void {
  const { demand, devices, slo } = input;
  const need = demand.stages.reduce((a, s) => a + s.devicesPerExecutor, 0);
  const hostsNeed = demand.stages.filter((s) => !(s.stage === 'encoder' && s.hostLabel)).reduce((a, s) => a + s.devicesPerExecutor, 0);
  if (hostsNeed > devices || (need > devices && input.monolithic === false)) {
    const biggest = [...demand.stages].sort((a, b) => b.devicesPerExecutor - a.devicesPerExecutor)[0]!;
    throw new InfeasiblePlanError(`budget: ${devices} devices cannot hold one executor of every stage (${demand.stages.map((s) => `${s.label}: ${s.devicesPerExecutor}`).join(', ')}; ${input.monolithic === false ? need : hostsNeed} needed)`, biggest.label);
  }
  if (!slo) return;
  // Kinds that miss an SLO even on an idle system: more than 10% of the mix together → 90% is out of reach.
  const misses = demand.floors.flatMap((f) => {
    const m = (slo.ttft_ms !== undefined && f.ttftMs > slo.ttft_ms) ? ['ttft_ms', slo.ttft_ms, f.ttftMs, f.ttftStage] as const
      : (slo.tpot_ms !== undefined && f.tpotMs > slo.tpot_ms) ? ['tpot_ms', slo.tpot_ms, f.tpotMs, f.tpotStage] as const
      : (slo.e2el_ms !== undefined && f.e2elMs > slo.e2el_ms) ? ['e2el_ms', slo.e2el_ms, f.e2elMs, f.e2elStage] as const : null;
    return m ? [{ f, m }] : [];
  });
  const share = misses.reduce((a, x) => a + x.f.weight, 0);
  if (share > 1 - ATTAINMENT) {
    const { f, m } = misses.sort((a, b) => b.f.weight - a.f.weight)[0]!;
    throw new InfeasiblePlanError(`slo: ${m[0]}=${m[1]} cannot be met: ${misses.map((x) => x.f.kind).join(', ')} requests (${(share * 100).toFixed(0)}% of the mix) miss it on an idle system (${f.kind}: ${m[2].toFixed(1)} ms, most of it in stage ${m[3]}); no plan reaches ${ATTAINMENT * 100}% attainment`, m[3]);
  }
}

export async function searchPlan(input: SearchInput, evaluate: (c: Screened) => Promise<number>): Promise<SearchResult> {
  const all: Screened[] = [];
  const fine: Screened[] = [];
  const top = Math.max(1, input.fineCandidates ?? 4);
  let baseError: unknown;
  const variants: TpVariant[] = [{ devicesPerExecutor: {}, demand: input.demand }, ...(input.variants ?? [])];
  variants.forEach((v, i) => {
    try {
      checkFeasible({ ...input, demand: v.demand });
    } catch (e) {
      if (i === 0) baseError = e;
      return;
    }
    const stages = v.demand.stages;
    const dpe = i === 0 ? {} : { devicesPerExecutor: Object.fromEntries(stages.map((st) => [st.label, st.devicesPerExecutor])) };
    const ranked = splits(stages, input.devices, input.colocate ?? true).map((r) => screen(stages, { mode: 'split', replicas: r, ...dpe })).sort((a, b) => b.screenRateRps - a.screenRateRps);
    all.push(...ranked);
    fine.push(...ranked.slice(0, i === 0 ? top : 1));
    // Monolithic replicas keep the task's own devices per executor (vLLM-Omni-style engines are not re-split here).
    const mono = i === 0 && input.monolithic !== false ? monolithicCandidate(stages, input.devices) : null;
    if (mono) {
      all.push(screen(stages, mono));
      fine.push(screen(stages, mono));
    }
  });
  if (all.length === 0) throw baseError ?? new InfeasiblePlanError(`budget: ${input.devices} devices hold no plan`, input.demand.stages[0]?.label ?? '');
  if (input.minRateRps !== undefined) {
    const bestScreen = all.reduce((a, b) => (b.screenRateRps > a.screenRateRps ? b : a));
    if (bestScreen.screenRateRps < input.minRateRps) {
      throw new InfeasiblePlanError(`rate: ${input.minRateRps} req/s does not fit ${input.devices} devices: the best plan's bottleneck stage ${bestScreen.bottleneck} serves at most ${bestScreen.screenRateRps.toFixed(2)} req/s`, bestScreen.bottleneck);
    }
  }
  const evaluated: Evaluated[] = [];
  for (const c of fine) evaluated.push({ ...c, goodputRps: await evaluate(c) });
  const best = evaluated.reduce((a, b) => (b.goodputRps > a.goodputRps || (b.goodputRps === a.goodputRps && b.screenRateRps > a.screenRateRps) ? b : a));
  const at = best.goodputRps > 0 ? best.goodputRps : best.screenRateRps;
  const headroom = Object.fromEntries(Object.entries(best.capacityRps).map(([l, cap]) => [l, cap / at]));
  return { best, evaluated, screened: all.length, headroom };
}
