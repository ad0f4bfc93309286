/**
 * `cornserve profile` in virtual time: each task's throughput–latency profile under the scenario's device preset,
 * measured as the live profiler measures one executor (control/taskmanager/profiler.ts): closed loops of c callers,
 * c = 1, 2, 4, … until the live stop rule (`sweepStopped`) says throughput stopped rising, each level a warm-up then
 * a measured window; the points and their Pareto frontier make a TaskProfile, the record the live CapacitySource
 * reads. Where the live profiler sends the descriptor's one sample invocation, this sends the scenario's own
 * invocations of the task (the request mix, media sizes and lengths), so the figure is the executor's capacity on the
 * traffic it will serve. Executors run split (no encoder inside), as in a disaggregated deployment.
 */
import { paretoFrontier, percentile, saturationPoint, sweepStopped, DEFAULT_SWEEP_STOP } from '../policies/frontier.js';
import type { AutoscalePolicy, ProfilePoint, TaskProfile } from '../lib/autoscale.js';
import { nextSpec } from '../bench/workload/mix.js';
import { RandomSource } from '../bench/workload/random.js';
import { EventQueue } from './engine/queue.js';
import { llmTokensOf } from './latency/models.js';
import { makeExecutor, nodeCompute, recordApp, unitsOf } from './run.js';
import type { SimTask } from './apps/record.js';
import type { SimJob } from './executors/types.js';
import type { Scenario } from './scenario/schema.js';

export interface SimProfileOptions {
  /** Completions measured per level: `perCaller` × c + `base` (after c warm-up completions per caller). */
  perCaller?: number;
  base?: number;
  /** @default 256, as the live profiler */
  maxConcurrency?: number;
}

/** One closed-loop level: c callers, each sending its next invocation when the last one returns. */
function measureLevel(task: SimTask, sc: Scenario, nextJob: () => Omit<SimJob, 'id' | 'done'>, c: number, o: Required<SimProfileOptions>): ProfilePoint {
  const events = new EventQueue();
  // On its node alone (a device of its own, or the node's shared cores with nothing else running), as profiled live.
  const ex = makeExecutor(task, `${task.label}#profile`, 0, events, sc.models, nodeCompute(sc, events).of(0));
  const warmup = c;
  const measured = o.perCaller * c + o.base;
  let ids = 0;
  let completed = 0;
  let windowStart = -1;
  const latencies: number[] = [];
  const call = () => {
    const sent = events.now;
    ex.submit({
      ...nextJob(),
      id: ids++,
      done: (t) => {
        completed++;
        if (completed === warmup) windowStart = t;
        else if (completed > warmup && completed <= warmup + measured) latencies.push(t - sent);
        if (completed < warmup + measured) events.after(0, call);
      },
    });
  };
  for (let i = 0; i < c; i++) call();
  events.run();
  const windowMs = events.now - windowStart;
  latencies.sort((a, b) => a - b);
  return { devicesPerExecutor: task.devicesPerExecutor, concurrency: c, throughputRps: windowMs > 0 ? (latencies.length * 1000) / windowMs : 0, p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) };
}

/** Profiles of the scenario's tasks (by label); `labels` limits them (e.g. to the tasks a plan runs on executors). */
export async function profileTasks(sc: Scenario, labels?: readonly string[], opts: SimProfileOptions = {}): Promise<Record<string, TaskProfile>> {
  const o: Required<SimProfileOptions> = { perCaller: 8, base: 40, maxConcurrency: 256, ...opts };
  const tasks = new Map<string, SimTask>();
  const byKind = await recordApp(sc, tasks);
  const out: Record<string, TaskProfile> = {};
  for (const task of tasks.values()) {
    if (labels && !labels.includes(task.label)) continue;
    // The task's invocations in the mix: a request of a kind whose graphs call it, with its encoder units.
    const rng = new RandomSource(sc.workload.seed).fork(`profile:${task.label}`);
    let index = 0;
    const nextJob = (): Omit<SimJob, 'id' | 'done'> => {
      for (let tries = 0; tries < 10_000; tries++) {
        const spec = nextSpec(index++, sc.workload.mix, rng);
        for (const g of byKind.get(spec.kind) ?? []) {
          const inv = g.invocations.find((x) => x.task.taskId === task.taskId);
          if (!inv) continue;
          const units = unitsOf(spec, sc.models);
          const encoderUnits = inv.producers.reduce((a, p) => a + (g.invocations[p]!.task.stage === 'encoder' ? units : 0), 0);
          return { units, promptTokens: spec.inputTokens + llmTokensOf(sc.models.encoder, encoderUnits), outputTokens: spec.outputTokens };
        }
      }
      throw new RangeError(`profile: no request of the mix calls ${task.label}`);
    };
    if (![...byKind.values()].flat().some((g) => g.invocations.some((x) => x.task.taskId === task.taskId))) continue;
    const points: ProfilePoint[] = [];
    for (let c = 1; c <= o.maxConcurrency; c *= 2) {
      points.push(measureLevel(task, sc, nextJob, c, o));
      if (sweepStopped(points.map((p) => p.throughputRps), DEFAULT_SWEEP_STOP)) break;
    }
    out[task.label] = { taskKey: task.label, deviceKind: sc.cluster.device, points, frontier: paretoFrontier(points), measuredAt: 0 };
  }
  return out;
}

/**
 * The policy an operator sets from a profile (`cornserve autoscale TASK --target N` after `cornserve profile TASK`):
 * in flight per executor = the profile's saturation concurrency (the lowest within 8% of its best throughput:
 * `saturation` in `POST /task/profile`), so a batching LLM or generator is sized by the batch it fills, an encoder
 * by the few it overlaps.
 */
export function policyFromProfile(profile: TaskProfile, min: number, max: number): AutoscalePolicy {
  const sat = saturationPoint(profile.points);
  return { min, max, target: sat ? sat.concurrency : 2 };
}
