/**
 * Profile arithmetic, pure: the throughput–latency Pareto frontier of measured points, when a concurrency sweep
 * has stopped gaining throughput, and where a profile saturates. The profiler (control/taskmanager/profiler.ts)
 * measures; this decides.
 */
import type { ProfilePoint } from '../lib/autoscale.js';

/** `a` beats `b`: at least as much throughput at no more p99, and strictly better on one of them. */
const beats = (a: ProfilePoint, b: ProfilePoint) =>
  a.throughputRps >= b.throughputRps && a.p99Ms <= b.p99Ms && (a.throughputRps > b.throughputRps || a.p99Ms < b.p99Ms);

/** The points no other point beats on both throughput and p99, by rising p99 (and so rising throughput). */
export function paretoFrontier(points: readonly ProfilePoint[]): ProfilePoint[] {
  const front = points.filter((p) => !points.some((q) => beats(q, p)));
  // Equal points (same throughput and p99) are kept once: the one at the lowest concurrency, then fewest devices.
  const unique = front.filter(
    (p, i) => !front.some((q, j) => j !== i && q.throughputRps === p.throughputRps && q.p99Ms === p.p99Ms && (q.concurrency < p.concurrency || (q.concurrency === p.concurrency && (q.devicesPerExecutor < p.devicesPerExecutor || (q.devicesPerExecutor === p.devicesPerExecutor && j < i))))),
  );
  return unique.sort((a, b) => a.p99Ms - b.p99Ms || a.throughputRps - b.throughputRps);
}

export interface SweepStopRule {
  /** A step "gains" when its throughput exceeds the best so far by at least this fraction. @default 0.08 */
  minGain: number;
  /** Steps in a row without a gain that end the sweep (one noisy step does not). @default 2 */
  patience: number;
}

export const DEFAULT_SWEEP_STOP: SweepStopRule = { minGain: 0.08, patience: 2 };

/**
 * Whether a concurrency sweep has stopped rising: the last `patience` steps each gained less than `minGain` over
 * the best throughput measured before them. `throughputs` are the steps in the order measured.
 */
export function sweepStopped(throughputs: readonly number[], rule: SweepStopRule = DEFAULT_SWEEP_STOP): boolean {
  if (throughputs.length <= rule.patience) return false;
  for (let i = throughputs.length - rule.patience; i < throughputs.length; i++) {
    const bestBefore = Math.max(...throughputs.slice(0, i));
    if (throughputs[i]! >= bestBefore * (1 + rule.minGain)) return false;
  }
  return true;
}

/**
 * The saturation point of one devices-per-executor option: the lowest concurrency whose throughput is within
 * `within` of the best (more concurrency past it only adds latency). Undefined for no points.
 */
export function saturationPoint(points: readonly ProfilePoint[], within = DEFAULT_SWEEP_STOP.minGain): ProfilePoint | undefined {
  if (points.length === 0) return undefined;
  const best = Math.max(...points.map((p) => p.throughputRps));
  return [...points].sort((a, b) => a.concurrency - b.concurrency).find((p) => p.throughputRps >= best * (1 - within));
}

/** Nearest-rank percentile (q in 0–100) of sorted values: what a profile point's p50 / p99 are. */
export const percentile = (sorted: readonly number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((q / 100) * sorted.length) - 1))]!;
