/**
 * What one executor of a task can serve, pure: from its profile read at the policy's target (or SLO), kept current
 * by live service times, else from live service times alone. The I/O side (control/autoscaler/capacity-source.ts)
 * reads profiles and live stats from the Store and calls `estimateCapacity`; the autoscaler takes the result
 * through its injected capacity provider.
 *
 * Why live evidence can override a profile: a profile is measured once (maybe on other hardware, another load,
 * an older executor build). When the dispatcher's live latency at the concurrency it observes differs from the
 * profile's latency at that concurrency by more than `margin`, the profile's figure is scaled by the ratio (latency
 * twice the profile's ⇒ half the capacity), and the source says 'live'.
 */
import type { AutoscalePolicy, ExecutorLiveStats, ProfilePoint, TaskCapacity, TaskProfile } from '../lib/autoscale.js';

export interface CapacityOptions {
  /** Live stats older than this are ignored. @default 30000 */
  maxLiveAgeMs: number;
  /** Live stats with fewer samples are ignored. @default 20 */
  minSamples: number;
  /** Live latency may differ from the profile's by this fraction before it overrides the profile. @default 0.25 */
  margin: number;
}

export const DEFAULT_CAPACITY_OPTIONS: CapacityOptions = { maxLiveAgeMs: 30_000, minSamples: 20, margin: 0.25 };

/**
 * The profile's throughput per executor under the policy: with `target` (in-flight per executor), the best point at
 * concurrency ≤ target (the lowest-concurrency point when none is); with `sloMs`, the best point whose p99 meets it
 * (the lowest-p99 point when none does). Only points of `devicesPerExecutor` count when given.
 */
export function profileCapacityAt(profile: TaskProfile, policy: AutoscalePolicy, devicesPerExecutor?: number): ProfilePoint | undefined {
  const points = profile.points.filter((p) => devicesPerExecutor === undefined || p.devicesPerExecutor === devicesPerExecutor);
  if (points.length === 0) return undefined;
  const best = (ps: ProfilePoint[]) => ps.reduce((a, b) => (b.throughputRps > a.throughputRps ? b : a));
  if ('target' in policy) {
    const within = points.filter((p) => p.concurrency <= policy.target);
    return within.length ? best(within) : points.reduce((a, b) => (b.concurrency < a.concurrency ? b : a));
  }
  const meeting = points.filter((p) => p.p99Ms <= policy.sloMs);
  return meeting.length ? best(meeting) : points.reduce((a, b) => (b.p99Ms < a.p99Ms ? b : a));
}

/**
 * The profile's median latency at `concurrency`: interpolated linearly between measured concurrencies, the first
 * point's below them, and past the last one grown in proportion to concurrency (the sweep stops where throughput
 * stops rising, so from there on more in flight only queue: Little's law, latency = in-flight ÷ throughput). A
 * clamped figure would read a live backlog as a slower executor and cut its capacity.
 */
export function profileLatencyAt(points: readonly ProfilePoint[], concurrency: number): number | undefined {
  const ps = [...points].sort((a, b) => a.concurrency - b.concurrency);
  if (ps.length === 0) return undefined;
  if (concurrency <= ps[0]!.concurrency) return ps[0]!.p50Ms;
  for (let i = 1; i < ps.length; i++) {
    const a = ps[i - 1]!;
    const b = ps[i]!;
    if (concurrency <= b.concurrency) return a.p50Ms + ((b.p50Ms - a.p50Ms) * (concurrency - a.concurrency)) / (b.concurrency - a.concurrency);
  }
  const last = ps[ps.length - 1]!;
  return (last.p50Ms * concurrency) / last.concurrency;
}

/** The live stats that count (fresh, enough samples), merged into one sample-weighted figure; undefined when none count. */
function mergeLiveStats(live: readonly ExecutorLiveStats[], now: number, o: CapacityOptions = DEFAULT_CAPACITY_OPTIONS): { latencyMs: number; concurrency: number } | undefined {
  const fresh = live.filter((s) => now - s.updatedAt <= o.maxLiveAgeMs && s.samples >= o.minSamples && s.latencyMs > 0);
  if (fresh.length === 0) return undefined;
  const weight = fresh.reduce((n, s) => n + s.samples, 0);
  return {
    latencyMs: fresh.reduce((n, s) => n + s.latencyMs * s.samples, 0) / weight,
    concurrency: fresh.reduce((n, s) => n + s.concurrency * s.samples, 0) / weight,
  };
}

export interface CapacityInputs {
  taskId: string;
  profile: TaskProfile | undefined;
  /** The task's executors' live stats (any age; stale ones are ignored). */
  live: readonly ExecutorLiveStats[];
  policy: AutoscalePolicy;
  /** Devices per executor the task runs with (picks the profile's points). */
  devicesPerExecutor?: number;
  /** Requests one executor serves at once (its GET /load); absent = no limit. Caps the live estimate's concurrency. */
  concurrencyLimit?: number;
  now: number;
}

/** Profile at the policy's target/SLO (corrected by live evidence past the margin) → live alone → undefined (the autoscaler's default). */
export function estimateCapacity(x: CapacityInputs, o: CapacityOptions = DEFAULT_CAPACITY_OPTIONS): TaskCapacity | undefined {
  const live = mergeLiveStats(x.live, x.now, o);
  const point = x.profile ? profileCapacityAt(x.profile, x.policy, x.devicesPerExecutor) : undefined;
  if (point) {
    const points = x.profile!.points.filter((p) => p.devicesPerExecutor === point.devicesPerExecutor);
    const expected = live ? profileLatencyAt(points, live.concurrency) : undefined;
    if (live && expected && expected > 0) {
      const ratio = live.latencyMs / expected;
      if (Math.abs(ratio - 1) > o.margin) return { taskId: x.taskId, perExecutorRps: point.throughputRps / ratio, source: 'live' };
    }
    return { taskId: x.taskId, perExecutorRps: point.throughputRps, source: 'profile' };
  }
  if (live) {
    // No profile: Little's law, throughput = in-flight ÷ latency. With a target, at the target — unless more were in
    // flight: then the executor queued them (its latency includes the wait) and in-flight ÷ latency is what it
    // served flat out; target ÷ that latency would count the queueing as slowness (a backlog of 30 on an executor
    // of 10 req/s would read as 0.7 req/s). With an SLO, at the concurrency observed. The target counts only up to the
    // executor's concurrency limit: past it requests queue, so latency at the limit does not hold at the target (an
    // executor serving 1 at a time in 200 ms does 5 req/s, not 2 ÷ 200 ms = 10).
    const reach = 'target' in x.policy ? Math.min(x.policy.target, x.concurrencyLimit ?? Infinity) : 1;
    const concurrency = Math.max(reach, live.concurrency);
    return { taskId: x.taskId, perExecutorRps: (concurrency * 1000) / live.latencyMs, source: 'live' };
  }
  return undefined;
}

/** Weight of a new call in the live EWMAs: about the last 1/alpha calls count. */
const LIVE_EWMA_ALPHA = 0.1;

/** One EWMA step (a module function: foldLiveSample runs per executor call, and a closure made there costs more than the math). */
const ewma = (old: number, x: number, alpha: number) => old + alpha * (x - old);

/** Folds one completed call into an executor's live stats (the first call starts them). */
export function foldLiveSample(
  prev: ExecutorLiveStats | undefined,
  sample: { executorId: string; taskId: string; latencyMs: number; concurrency: number },
  now: number,
  alpha = LIVE_EWMA_ALPHA,
): ExecutorLiveStats {
  if (!prev) return { ...sample, samples: 1, updatedAt: now };
  return {
    executorId: sample.executorId,
    taskId: sample.taskId,
    latencyMs: ewma(prev.latencyMs, sample.latencyMs, alpha),
    concurrency: ewma(prev.concurrency, sample.concurrency, alpha),
    samples: prev.samples + 1,
    updatedAt: now,
  };
}
