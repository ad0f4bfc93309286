/**
 * `cornserve plan`'s pipeline: a scenario (app, mix, SLOs, cluster) → demand per stage → coarse-to-fine search
 * (analytic screen, then the simulator's goodput for the best candidates) → a plan with its explanation.
 */
import { allocate, buildInventory, type Inventory } from '../sim/policies.js';
import { recordApp } from '../sim/run.js';
import type { SimTask } from '../sim/apps/record.js';
import type { Scenario } from '../sim/scenario/schema.js';
import { nextSpec, type RequestSpec } from '../bench/workload/mix.js';
import { RandomSource } from '../bench/workload/random.js';
import { demandOf, type Demand } from './demand.js';
import { goodputOf } from './goodput.js';
import { PlanError, type Plan } from './schema.js';
import { searchPlan, type Candidate, type SearchResult } from './search.js';

/** Requests sampled from the mix to estimate demand (same generator and seed as the run's). */
const DEMAND_SAMPLE = 2000;

export async function demandFor(sc: Scenario): Promise<{ demand: Demand; tasks: Map<string, SimTask> }> {
  const tasks = new Map<string, SimTask>();
  const byKind = await recordApp(sc, tasks);
  const rng = new RandomSource(sc.workload.seed).fork('mix');
  const specs: RequestSpec[] = Array.from({ length: DEMAND_SAMPLE }, (_, i) => nextSpec(i, sc.workload.mix, rng));
  return { demand: demandOf(byKind, specs, sc.models), tasks };
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

export interface PlanOutcome { plan: Plan; search: SearchResult; demand: Demand }

export async function makePlan(sc: Scenario, o: { devices: number; minRateRps?: number; fineCandidates?: number; monolithic?: boolean; appName: string }): Promise<PlanOutcome> {
  const { demand } = await demandFor(sc);
  const search = await searchPlan(
    { demand, devices: o.devices, ...(sc.workload.slo ? { slo: sc.workload.slo } : {}), ...(o.minRateRps !== undefined ? { minRateRps: o.minRateRps } : {}), ...(o.fineCandidates !== undefined ? { fineCandidates: o.fineCandidates } : {}), ...(o.monolithic !== undefined ? { monolithic: o.monolithic } : {}) },
    (c) => goodputOf(sc, c, c.screenRateRps * 0.8),
  );
  const b = search.best;
  const devicesPer = Object.fromEntries(demand.stages.map((s) => [s.label, s.devicesPerExecutor]));
  const plan: Plan = {
    version: 1,
    app: o.appName,
    device: sc.cluster.device,
    cluster: { nodes: sc.cluster.nodes, devicesPerNode: sc.cluster.devicesPerNode },
    mode: b.mode === 'monolithic' ? 'monolithic' : demand.stages.some((s) => s.stage === 'encoder' && b.replicas[s.label] === 0) ? 'mixed' : 'split',
    components: demand.stages.map((s) => ({ label: s.label, stage: s.stage, replicas: b.replicas[s.label] ?? 0, devicesPerExecutor: s.devicesPerExecutor })),
    placement: placementOf(sc, b, devicesPer),
    explanation: { screenRateRps: b.screenRateRps, goodputRps: b.goodputRps, bottleneck: b.bottleneck, headroom: search.headroom },
  };
  return { plan, search, demand };
}
