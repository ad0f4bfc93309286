/**
 * `cornserve plan`'s pipeline: a scenario (app, mix, SLOs, cluster) → demand per stage → coarse-to-fine search
 * (analytic screen, then the simulator's goodput for the best candidates) → a plan with its explanation.
 */
import { allocate, buildInventory, type Inventory } from '../policies/allocation.js';
import { executorModelsFor, recordApp } from '../sim/run.js';
import { ScenarioError } from '../sim/apps/record.js';
import type { SimTask } from '../sim/apps/record.js';
import type { Scenario } from '../sim/scenario/schema.js';
import { nextSpec, type RequestSpec } from '../bench/workload/mix.js';
import { RandomSource } from '../bench/workload/random.js';
import { demandOf, type Demand } from './demand.js';
import { goodputOf } from './goodput.js';
import { PlanError, type Plan } from '../lib/plan.js';
import { searchPlan, type Candidate, type SearchResult, type TpVariant } from './search.js';
import { supportsTp } from '../sim/latency/tensor-parallel.js';

/** Requests sampled from the mix to estimate demand (same generator and seed as the run's). */
const DEMAND_SAMPLE = 2000;

/**
 * The demand of the scenario's mix at tensor-parallel degree 1 and, with `tp`, at every variant. With device
 * memory on, each LLM's decode batch is bounded by the KV cache its devices leave; a variant whose executor does
 * not fit is left out and its reason (which device runs out of what) kept in `unfit`. When the degree-1 plan does
 * not fit, that reason is the error.
 */
export async function demandFor(sc: Scenario, o: { tp?: boolean; devices?: number } = {}): Promise<{ demand: Demand; tasks: Map<string, SimTask>; variants: TpVariant[]; unfit: string[] }> {
  const tasks = new Map<string, SimTask>();
  const byKind = await recordApp(sc, tasks);
  const rng = new RandomSource(sc.workload.seed).fork('mix');
  const specs: RequestSpec[] = Array.from({ length: DEMAND_SAMPLE }, (_, i) => nextSpec(i, sc.workload.mix, rng));
  const modelsOf = executorModelsFor(sc, false);
  const demand = demandOf(byKind, specs, sc.models, {}, modelsOf);
  const unfit: string[] = [];
  const variants = o.tp ? tpAssignments([...tasks.values()], o.devices ?? Infinity).flatMap((tp) => {
    try {
      const d = demandOf(byKind, specs, sc.models, tp, modelsOf);
      return [{ devicesPerExecutor: Object.fromEntries(d.stages.map((s) => [s.label, s.devicesPerExecutor])), demand: d }];
    } catch (e) {
      if (!(e instanceof ScenarioError)) throw e;
      unfit.push(`${Object.entries(tp).map(([l, k]) => `${l} TP ${k}`).join(', ')}: ${e.message}`);
      return [];
    }
  }) : [];
  return { demand, tasks, variants, unfit };
}

/**
 * Tensor-parallel degrees searched: each LLM label 1, 2 or 4 × its task's devices, the encoders together 1 or
 * 2 × (a product kept small: every variant is screened in full); the all-1 assignment is the base, left out.
 */
export function tpAssignments(tasks: readonly SimTask[], devices: number): Array<Record<string, number>> {
  const llms = tasks.filter((t) => t.stage === 'llm' && supportsTp(t.stage));
  const encoders = tasks.filter((t) => t.stage === 'encoder');
  let out: Array<Record<string, number>> = [{}];
  for (const t of llms) out = out.flatMap((a) => [1, 2, 4].filter((k) => k * t.devicesPerExecutor <= devices).map((k) => ({ ...a, [t.label]: k })));
  if (encoders.length) out = out.flatMap((a) => [1, 2].map((k) => ({ ...a, ...Object.fromEntries(encoders.map((e) => [e.label, k])) })));
  return out.filter((a) => Object.values(a).some((k) => k > 1));
}

/** Executors per node and label, as the live allocation policy places them (the simulator's order: LLMs first). */
export function placementOf(sc: Scenario, c: Candidate, devicesPer: Record<string, number>): Plan['placement'] {
  let inv: Inventory = buildInventory(Array.from({ length: sc.cluster.nodes }, (_, i) => ({ node: `node-${i}`, devices: sc.cluster.devicesPerNode })));
  const counts = new Map<string, number>();
  const order = Object.entries(c.replicas).sort(([a], [b]) => (a.startsWith('llm') === b.startsWith('llm') ? a.localeCompare(b) : a.startsWith('llm') ? -1 : 1));
  for (const [label, n] of order) {
    for (let i = 0; i < n; i++) {
      try {
        const a = allocate(inv, devicesPer[label] ?? 1, label);
        inv = a.inventory;
        const key = `${a.devices[0]!.node}\u0000${label}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      } catch (e) {
        throw new PlanError(`placement: ${sc.cluster.nodes} × ${sc.cluster.devicesPerNode} devices cannot place ${n} × ${label}: ${(e as Error).message}`);
      }
    }
  }
  return [...counts].map(([k, executors]) => {
    const [node, label] = k.split('\u0000') as [string, string];
    return { node: Number(node.slice('node-'.length)), label, executors };
  });
}

export interface PlanOutcome { plan: Plan; search: SearchResult; demand: Demand; /** Tensor-parallel variants left out because an executor does not fit its devices, with why. */ unfit: string[] }

export async function makePlan(sc: Scenario, o: { devices: number; minRateRps?: number; fineCandidates?: number; monolithic?: boolean; colocate?: boolean; tp?: boolean; appName: string }): Promise<PlanOutcome> {
  const { demand, variants, unfit } = await demandFor(sc, { tp: o.tp ?? false, devices: o.devices });
  const search = await searchPlan(
    { demand, variants, devices: o.devices, ...(sc.workload.slo ? { slo: sc.workload.slo } : {}), ...(o.minRateRps !== undefined ? { minRateRps: o.minRateRps } : {}), ...(o.fineCandidates !== undefined ? { fineCandidates: o.fineCandidates } : {}), ...(o.monolithic !== undefined ? { monolithic: o.monolithic } : {}), ...(o.colocate !== undefined ? { colocate: o.colocate } : {}) },
    (c) => goodputOf(sc, c, c.screenRateRps * 0.8),
  );
  const b = search.best;
  const devicesPer = { ...Object.fromEntries(demand.stages.map((s) => [s.label, s.devicesPerExecutor])), ...b.devicesPerExecutor };
  const plan: Plan = {
    version: 1,
    app: o.appName,
    device: sc.cluster.device,
    cluster: { nodes: sc.cluster.nodes, devicesPerNode: sc.cluster.devicesPerNode },
    mode: b.mode === 'monolithic' ? 'monolithic' : demand.stages.some((s) => s.stage === 'encoder' && b.replicas[s.label] === 0) ? 'mixed' : 'split',
    components: demand.stages.map((s) => ({ label: s.label, stage: s.stage, replicas: b.replicas[s.label] ?? 0, devicesPerExecutor: devicesPer[s.label]! })),
    placement: placementOf(sc, b, devicesPer),
    explanation: { screenRateRps: b.screenRateRps, goodputRps: b.goodputRps, bottleneck: b.bottleneck, headroom: search.headroom },
  };
  return { plan, search, demand, unfit };
}
