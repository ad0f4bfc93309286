/**
 * The profiler: measures one executor's throughput and latency at rising concurrency (1, 2, 4, … until the sweep
 * stops gaining throughput, policies/frontier.ts) for each devices-per-executor option the descriptor
 * supports, and builds the task's profile (every point plus its Pareto frontier).
 *
 * It drives REAL invocations: the descriptor's sample invocation (`profiling.sample`) turned into an executor
 * request by the descriptor's `request`, sent with the dispatcher's own executor client (callExecutor) and read by
 * the descriptor's `response`, as live traffic is. Each concurrency level runs a closed loop of `c` callers:
 * a warm-up (not counted), then a measured window; throughput = replies completed in the window ÷ its length.
 *
 * It runs against an EXISTING executor of the task (no device is taken from anyone): the caller
 * (ResourceManager.profile) raises that executor's `outstanding` by the profiler's concurrency while it runs, so
 * least-outstanding routing steers live traffic to the task's other executors, and logs that it does. Live traffic
 * that still reaches it (a task with one executor) shares it: its latency rises for the length of the run, and the
 * measured figures are those of the shared executor.
 */
import type { UnitTask } from '../../functions/sdk/index.js';
import { paretoFrontier, percentile, sweepStopped, DEFAULT_SWEEP_STOP, type SweepStopRule } from '../../policies/frontier.js';
import type { ProfilePoint, TaskProfile } from '../../lib/autoscale.js';
import type { TaskDescriptor } from '../../lib/descriptor.js';
import { callExecutor } from '../dispatcher/executor-client.js';
import { NotProfilableError } from './errors.js';

export interface ProfileTarget {
  taskId: string;
  task: UnitTask;
  descriptor: TaskDescriptor;
  executorId: string;
  /** Base URL of the executor. */
  url: string;
  devicesPerExecutor: number;
}

export interface ProfilerOptions {
  /** Measured window per concurrency level. @default 2000 */
  stepMs?: number;
  /** Uncounted warm-up before each window. @default 300 */
  warmupMs?: number;
  /** The sweep ends here even if throughput still rises. @default 256 */
  maxConcurrency?: number;
  /** When a sweep has stopped rising. @default DEFAULT_SWEEP_STOP */
  stop?: SweepStopRule;
  /** Bound on one call. @default 30000 */
  callTimeoutMs?: number;
  /** Told each point as it is measured. */
  onPoint?: (point: ProfilePoint) => void;
  signal?: AbortSignal;
}

/** The devices-per-executor options the descriptor supports for `task` (the launch's own when it lists none). */
export function devicesPerExecutorOptions(descriptor: TaskDescriptor, task: UnitTask): number[] {
  const listed = descriptor.profiling?.devicesPerExecutorOptions?.(task);
  return listed?.length ? [...new Set(listed)].sort((a, b) => a - b) : [descriptor.launch(task).devicesPerExecutor];
}

/** One invocation of the sample, read to its end; resolves with its latency (ms). */
async function invokeOnce(target: ProfileTarget, timeoutMs: number, signal: AbortSignal | undefined): Promise<number> {
  const sample = target.descriptor.profiling!.sample(target.task);
  const started = performance.now();
  const bound = AbortSignal.timeout(timeoutMs);
  const res = await callExecutor({
    site: { invocation: 0, task: target.task.name, taskId: target.taskId, executorId: target.executorId, url: target.url },
    request: target.descriptor.request(target.task, sample.input, sample.output),
    deadline: Date.now() + timeoutMs,
    headers: {},
    signal: signal ? AbortSignal.any([signal, bound]) : bound,
  });
  const result = await target.descriptor.response(target.task, sample.output, res);
  if (result.stream) for await (const _ of result.stream); // eslint-disable-line @typescript-eslint/no-unused-vars -- read to the end
  return performance.now() - started;
}

/** Throughput and latency of `concurrency` closed-loop callers over one measured window. */
export async function measureAt(target: ProfileTarget, concurrency: number, o: ProfilerOptions = {}): Promise<ProfilePoint> {
  const stepMs = o.stepMs ?? 2000;
  const warmupMs = o.warmupMs ?? 300;
  const timeoutMs = o.callTimeoutMs ?? 30_000;
  const t0 = performance.now();
  const windowStart = t0 + warmupMs;
  const windowEnd = windowStart + stepMs;
  const latencies: number[] = [];
  const caller = async () => {
    while (performance.now() < windowEnd) {
      const ms = await invokeOnce(target, timeoutMs, o.signal);
      const done = performance.now();
      if (done >= windowStart && done <= windowEnd) latencies.push(ms);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, caller));
  if (latencies.length === 0) throw new Error(`no invocation of ${target.task.name} completed within the ${stepMs} ms window at concurrency ${concurrency}; raise stepMs`);
  latencies.sort((a, b) => a - b);
  const round = (x: number) => Math.round(x * 100) / 100;
  return {
    devicesPerExecutor: target.devicesPerExecutor,
    concurrency,
    throughputRps: round((latencies.length * 1000) / stepMs),
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
  };
}

/** The concurrency sweep on one executor: 1, 2, 4, … until the stop rule says throughput stopped rising. */
export async function sweepConcurrency(target: ProfileTarget, o: ProfilerOptions = {}): Promise<ProfilePoint[]> {
  if (!target.descriptor.profiling) throw new NotProfilableError(target.taskId, target.descriptor.taskClass);
  const max = o.maxConcurrency ?? 256;
  const points: ProfilePoint[] = [];
  for (let c = 1; c <= max; c *= 2) {
    o.signal?.throwIfAborted();
    const point = await measureAt(target, c, o);
    points.push(point);
    o.onPoint?.(point);
    if (sweepStopped(points.map((p) => p.throughputRps), o.stop ?? DEFAULT_SWEEP_STOP)) break;
  }
  return points;
}

/** The stored form: every point and its frontier, under the task's key and device kind. */
export function buildProfile(taskKey: string, deviceKind: string, points: ProfilePoint[], measuredAt: number): TaskProfile {
  return { taskKey, deviceKind, points, frontier: paretoFrontier(points), measuredAt };
}
