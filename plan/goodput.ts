/**
 * Goodput of a deployment in the simulator: the highest offered rate at which ≥ 90% of requests meet the SLOs
 * (DistServe's definition; the bench client's sweep uses the same target). Bracketing from a first guess, then
 * bisection to a relative width of `tolerance`.
 */
import { simulate, type SimOutcome } from '../sim/run.js';
import type { Scenario } from '../sim/scenario/schema.js';
import type { AutoscaleSettings } from '../sim/autoscale.js';
import type { Candidate } from './search.js';
import { PlanError } from '../lib/plan.js';

export const ATTAINMENT_TARGET = 0.9;

/** The scenario running candidate `c` at `rate`; with `autoscaler`, the live autoscaler starts from c's counts. */
export function scenarioFor(base: Scenario, c: Candidate, rate = base.workload.rate, autoscaler?: AutoscaleSettings): Scenario {
  const deployment: Scenario['deployment'] = autoscaler
    ? { mode: 'autoscaler', replicas: { ...c.replicas }, default: 1, autoscaler }
    : { mode: c.mode === 'monolithic' ? 'monolithic' : 'manual', replicas: { ...c.replicas }, default: 1, ...(c.devicesPerExecutor ? { devicesPerExecutor: { ...c.devicesPerExecutor } } : {}) };
  return { ...base, deployment, workload: { ...base.workload, rate } };
}

export const attainment = (o: SimOutcome) => (o.results.slo_attainment as number | null) ?? 0;

export interface GoodputPoint { rate: number; attainment: number; throughput: number; goodput: number }

export async function goodputOf(base: Scenario, c: Candidate, guessRps: number, o: { tolerance?: number; points?: GoodputPoint[]; autoscaler?: AutoscaleSettings } = {}): Promise<number> {
  // A deployment whose stages have no modelled work (an echo task without a concurrency limit) has no rate limit.
  if (!Number.isFinite(guessRps)) throw new PlanError(`goodput: the plan ${Object.entries(c.replicas).map(([l, n]) => `${n} × ${l}`).join(', ')} has no modelled capacity limit (no stage costs device time), so it has no goodput to search`);
  const tol = o.tolerance ?? 0.05;
  const passes = async (rate: number) => {
    const out = await simulate(scenarioFor(base, c, rate, o.autoscaler), { itl: false });
    const a = attainment(out);
    o.points?.push({ rate, attainment: a, throughput: out.results.request_throughput as number, goodput: (out.results.request_goodput as number | null) ?? 0 });
    return a >= ATTAINMENT_TARGET;
  };
  let lo = 0;
  let hi = Math.max(guessRps, 1e-3);
  if (await passes(hi)) {
    lo = hi;
    for (let i = 0; i < 8 && lo === hi; i++) {
      hi *= 2;
      if (await passes(hi)) lo = hi;
    }
    if (lo === hi) return lo;
  } else {
    let r = hi;
    for (let i = 0; i < 8 && lo === 0; i++) {
      r /= 2;
      if (await passes(r)) lo = r;
      else hi = r;
    }
    if (lo === 0) return 0;
  }
  while ((hi - lo) / hi > tol) {
    const mid = (lo + hi) / 2;
    if (await passes(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}
