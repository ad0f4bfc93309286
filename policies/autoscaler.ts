/**
 * The autoscaler's decision for each task (pure: injected clock via the `now` argument, no I/O; the resource
 * manager's loop and the simulator feed it the same way).
 *
 * Inputs, every tick: observe(TaskLoad[], AppLoad[]) — load samples — then decide(now, tasks) — the executor
 * count each task should have, with its reason. Per task:
 *   demand (req/s) = max(its own arrival rate, Σ over the apps using it of app rate × invocations per request)
 *     — graph-aware: when an app's rate rises, every stage of its graph gets the new demand at once, and a task
 *     shared by several apps adds up their demands;
 *   executors needed x = max(demand ÷ capacity per executor, in-flight ÷ target in-flight per executor)
 *     over a stable window (default 60 s) and a panic window (default 6 s); with a measured capacity (profile or
 *     live service times) x = demand ÷ capacity alone (see need() for why); either way, requests the executors
 *     report queued past their concurrency add the executors that would drain them within 5 s;
 *   in-flight counts at most the invocations sent to the task over the stable window (a reading above that is not
 *     load of ours, e.g. a profiler's routing weight, and is named in the reason, never acted on).
 * Panic (KPA): entered when the panic window needs ≥ panicThreshold (2) × the current executors; while in
 * panic (until a stable window without the condition) the count only rises, to ceil(x_panic).
 * Otherwise the count follows max(ceil(x_stable), ceil(x over the panic window)) upwards at once (a rise below the
 * panic threshold is followed within the panic window, not a stable window late); downwards only when even x_stable × (1 + tolerance)
 * needs fewer executors, continuously for scaleDownDelayMs, and never below half the current count in one step
 * (hysteresis: a steady load near a boundary causes no flapping). Always within the policy's [min, max].
 *
 * Capacity per executor comes from an injected provider (profiles, live estimates); when it has no figure, the
 * default: Little's law with the service time observed here (mean in-flight ÷ arrival rate over the stable window)
 * and the policy's target in-flight — perExecutorRps = target ÷ service time. For an {sloMs} policy the default
 * target in-flight is max(1, floor(sloMs ÷ service time)) (conservative: as if the executor served one at a time).
 */
import type { AppLoad, AutoscalePolicy, TaskCapacity, TaskLoad } from '../lib/autoscale.js';

export interface AutoscalerOptions {
  /** @default 60000 */
  stableWindowMs: number;
  /** @default 6000 */
  panicWindowMs: number;
  /** Panic when the panic window needs this many times the current executors. @default 2 */
  panicThreshold: number;
  /** How long the stable window must ask for fewer executors before a scale-down. @default 30000 */
  scaleDownDelayMs: number;
  /** One step removes at most current × (1 - 1/rate) executors. @default 2 (halving) */
  maxScaleDownRate: number;
  /** Scale-down hysteresis: down only when x × (1 + tolerance) needs fewer executors. @default 0.2 */
  tolerance: number;
}

const DEFAULT_AUTOSCALER_OPTIONS: AutoscalerOptions = {
  stableWindowMs: 60_000,
  panicWindowMs: 6_000,
  panicThreshold: 2,
  scaleDownDelayMs: 30_000,
  maxScaleDownRate: 2,
  tolerance: 0.2,
};

/** Target in-flight per executor when no policy gives one (Ray Serve's target_ongoing_requests). */
export const DEFAULT_TARGET_IN_FLIGHT = 2;

/** The policy of a task nobody configured: at least one executor (so an idle platform looks as before), up to the pool. */
export function defaultPolicy(poolExecutors: number): AutoscalePolicy {
  return { min: 1, max: Math.max(1, poolExecutors), target: DEFAULT_TARGET_IN_FLIGHT };
}

/** Capacity per executor of a task; undefined = no figure (the autoscaler's Little's-law default applies). */
export type CapacityProvider = (taskId: string) => TaskCapacity | undefined;

/** What decide() needs to know about a task now. */
export interface TaskSnapshot {
  taskId: string;
  policy: AutoscalePolicy;
  /** Executors it has now (the count decisions start from). */
  executors: number;
}

export interface TaskWant {
  taskId: string;
  from: number;
  to: number;
  /** Demand (req/s) the decision used (the panic window's in panic, else the stable window's). */
  demandRps: number;
  /**
   * Demand (req/s) now, from the latest tick alone: its arrival rate (or app rate × invocations per request), or its
   * in-flight at the target per executor × capacity when more. What a full pool weighs its devices by: a task whose
   * load just fell keeps its executors a stable window long by its own decision, but its spare capacity is judged by
   * the load it has now, so a task whose load just rose gets the devices at once. In-flight counts because it shows
   * a step on the first tick (rates are read by complete seconds, so the latest rate may still be the old one).
   */
  currentDemandRps: number;
  capacity: TaskCapacity | undefined;
  panic: boolean;
  /** Apps whose graphs use this task (by observed invocations). */
  apps: string[];
  reason: string;
}

interface TaskSample {
  at: number;
  windowMs: number;
  arrivalRps: number;
  inFlight: number;
  /** In flight reported beyond every invocation sent over the stable window: not counted (see observe()). */
  unsent: number;
  held: number;
  queueDepth: number;
}

interface AppSample {
  at: number;
  windowMs: number;
  requestRps: number;
}

interface WindowStats {
  arrivalRps: number;
  inFlight: number;
  held: number;
  /** In flight reported beyond what was sent, at the window's last sample (not counted in inFlight). */
  unsent: number;
  /** Requests waiting in the task's executors past their concurrency (their own report), at the window's last sample. */
  queued: number;
  appDemandRps: number;
  samples: number;
}

const EPS = 1e-9;
/** A queue at the executors is to be drained within this long by the executors it adds (see need()). */
const BACKLOG_DRAIN_MS = 5_000;
/** A window short enough to hold one sample (the per-tick figure). */
const TICK_SLICE_MS = 1;

export class Autoscaler {
  readonly options: AutoscalerOptions;
  private readonly taskSamples = new Map<string, TaskSample[]>();
  private readonly appSamples = new Map<string, AppSample[]>();
  /** appId -> taskId -> invocations per request (latest observed) */
  private readonly graphs = new Map<string, Record<string, number>>();
  private readonly serviceTimeMs = new Map<string, number>();
  private readonly panicUntil = new Map<string, number>();
  private readonly belowSince = new Map<string, number>();

  constructor(
    options: Partial<AutoscalerOptions> = {},
    private readonly capacity: CapacityProvider = () => undefined,
  ) {
    this.options = { ...DEFAULT_AUTOSCALER_OPTIONS, ...options };
  }

  /** Adds load samples (each covers `windowMs` ending at `at`). Samples older than the stable window are dropped. */
  observe(tasks: TaskLoad[], apps: AppLoad[]): void {
    for (const l of tasks) {
      // In flight cannot exceed what was sent to the task: a reading above every invocation sent over the stable window
      // (held ones included) is no load of ours — a count left behind, a routing weight — and must drive no decision.
      const sent = this.sentWithin(l.taskId, l.at) + (l.arrivalRps * l.windowMs) / 1000;
      const inFlight = Math.min(l.inFlight, Math.max(sent, l.held));
      push(this.taskSamples, l.taskId, { at: l.at, windowMs: l.windowMs, arrivalRps: l.arrivalRps, inFlight, unsent: l.inFlight - inFlight, held: l.held, queueDepth: l.queueDepth ?? 0 });
    }
    for (const a of apps) {
      push(this.appSamples, a.appId, { at: a.at, windowMs: a.windowMs, requestRps: a.requestRps });
      if (Object.keys(a.invocationsPerRequest).length > 0) this.graphs.set(a.appId, { ...a.invocationsPerRequest });
    }
  }

  /** Invocations that arrived at the task over the stable window ending at `at` (before this sample). */
  private sentWithin(taskId: string, at: number): number {
    const from = at - this.options.stableWindowMs;
    return (this.taskSamples.get(taskId) ?? []).filter((s) => s.at > from && s.at < at).reduce((a, s) => a + (s.arrivalRps * s.windowMs) / 1000, 0);
  }

  /** The service time (ms) Little's law gives over the stable window, or the last one known. */
  observedServiceTimeMs(taskId: string): number | undefined {
    return this.serviceTimeMs.get(taskId);
  }

  /** The executor count each task should have now, before the device pool is considered. */
  decide(now: number, tasks: TaskSnapshot[]): TaskWant[] {
    this.prune(now);
    return tasks.map((t) => this.decideOne(now, t));
  }

  /** Forgets a task (torn down). */
  forget(taskId: string): void {
    for (const m of [this.taskSamples, this.serviceTimeMs, this.panicUntil, this.belowSince]) m.delete(taskId);
  }

  private decideOne(now: number, t: TaskSnapshot): TaskWant {
    const o = this.options;
    const stable = this.stats(t.taskId, now, o.stableWindowMs);
    const panicW = this.stats(t.taskId, now, o.panicWindowMs);
    if (stable.arrivalRps > EPS && stable.inFlight > EPS) this.serviceTimeMs.set(t.taskId, (stable.inFlight / stable.arrivalRps) * 1000);
    const capacity = this.capacityOf(t);
    const target = this.targetInFlight(t);
    const need = (w: WindowStats) => {
      const demand = Math.max(w.arrivalRps, w.appDemandRps);
      const byRate = capacity && capacity.perExecutorRps > 0 ? demand / capacity.perExecutorRps : 0;
      // A measured capacity (profile, or live service times) already says what one executor serves at the policy's
      // target: demand ÷ it is the need. In-flight ÷ target is then no second measure: in-flight swings with every
      // burst (an encoder read at 1 in flight asks for an executor per queued request) and counts invocations leased
      // to the task that still wait for their producers (a generator's, for the whole LLM call before it), which
      // more executors of the task would not serve sooner. Without one (the Little's-law default), it is the signal.
      // A queue the executors report waiting past their concurrency is work demand ÷ capacity does not see (a rate
      // just above capacity reads as capacity, since arrivals are what got through): the executors that would drain it
      // within BACKLOG_DRAIN_MS are added.
      const backlog = capacity && capacity.perExecutorRps > 0 ? w.queued / (capacity.perExecutorRps * (BACKLOG_DRAIN_MS / 1000)) : 0;
      const x = capacity && capacity.source !== 'default' ? byRate + backlog : Math.max(byRate + backlog, w.inFlight / target);
      return w.held > 0 ? Math.max(x, 1) : x; // held invocations need at least one executor
    };
    const latest = this.stats(t.taskId, now, TICK_SLICE_MS);
    const xs = need(stable);
    // The panic figure also counts the latest tick alone: a step (an app's rate × its graph) shows there on the first
    // tick after it, while the panic window's mean still mixes in the seconds before the step.
    const latestFirst = need(latest) > need(panicW);
    const xp = latestFirst ? need(latest) : need(panicW);
    const { min, max } = t.policy;
    const from = t.executors;
    const apps = this.appsOf(t.taskId);
    const clamp = (n: number) => Math.min(max, Math.max(min, n));
    const described = (w: WindowStats, over: string, x: number) =>
      `demand ${fmt(Math.max(w.arrivalRps, w.appDemandRps))} req/s` +
      (w.appDemandRps > w.arrivalRps + EPS ? ` (from app rates × invocations per request)` : '') +
      `, in-flight ${fmt(w.inFlight)}` +
      (w.unsent > 0 ? ` (${fmt(w.unsent)} more reported than were sent in ${o.stableWindowMs / 1000} s: not counted)` : '') +
      (w.queued > 0 ? `, ${fmt(w.queued)} queued at the executors` : '') +
      (capacity ? `, ${fmt(capacity.perExecutorRps)} req/s per executor (${capacity.source})` : '') +
      ` over ${over} → ${fmt(x)} executors`;
    const want = (to: number, reason: string, panic: boolean, w: WindowStats): TaskWant => ({
      taskId: t.taskId,
      from,
      to,
      demandRps: Math.max(w.arrivalRps, w.appDemandRps),
      currentDemandRps: Math.max(latest.arrivalRps, latest.appDemandRps, capacity ? need(latest) * capacity.perExecutorRps : 0),
      capacity,
      panic,
      apps,
      reason,
    });

    // Panic: a sudden rise (or any demand at zero executors) is answered from the short window.
    const panicking = (this.panicUntil.get(t.taskId) ?? -Infinity) > now;
    const panicNow = panicW.samples > 0 && (from === 0 ? xp > EPS : xp >= o.panicThreshold * from);
    if (panicNow) this.panicUntil.set(t.taskId, now + o.stableWindowMs);
    if (panicNow || panicking) {
      this.belowSince.delete(t.taskId);
      const to = clamp(Math.max(from, ceil(xp)));
      const why = from === 0 ? 'scale from zero' : panicNow ? 'panic' : 'in panic';
      const basis = latestFirst ? latest : panicW;
      return want(to, `${why}: ${described(basis, latestFirst ? 'the latest tick' : `${o.panicWindowMs / 1000} s`, xp)}`, true, basis);
    }

    // Upwards the short window counts too: a rise below the panic threshold (2 executors that now need 2.3) would
    // otherwise wait for the stable window's mean to catch up — a minute or more — while a queue builds. Going up on
    // 6 s of load is safe against noise because coming down still takes the whole stable window (below).
    const xw = need(panicW);
    const upShort = panicW.samples > 0 && ceil(xw) > ceil(xs);
    const up = upShort ? ceil(xw) : ceil(xs);
    if (up > from) {
      this.belowSince.delete(t.taskId);
      const [basis, over, x] = upShort ? [panicW, `${o.panicWindowMs / 1000} s`, xw] as const : [stable, `${o.stableWindowMs / 1000} s`, xs] as const;
      return want(clamp(up), `load: ${described(basis, over, x)}`, false, basis);
    }
    // Down only to what the busiest tick of the whole stable window needed: load that just stopped keeps its executors a window long.
    const peak = this.tickTimes(t.taskId, now).reduce((m, at) => Math.max(m, need(this.stats(t.taskId, at, TICK_SLICE_MS))), xs);
    const down = ceil(peak * (1 + o.tolerance));
    if (down < from && from > min) {
      const since = this.belowSince.get(t.taskId) ?? now;
      this.belowSince.set(t.taskId, since);
      if (now - since < o.scaleDownDelayMs) return want(clamp(from), `steady (scale-down to ${clamp(down)} pending for ${fmt((now - since) / 1000)} s of ${o.scaleDownDelayMs / 1000} s)`, false, stable);
      this.belowSince.delete(t.taskId);
      const halved = from <= 1 ? 0 : Math.ceil(from / o.maxScaleDownRate);
      const to = clamp(Math.max(down, halved));
      return want(to, `idle capacity: ${described(stable, `${o.stableWindowMs / 1000} s`, xs)}${to === halved && halved > down ? ` (at most ÷${o.maxScaleDownRate} per step)` : ''}`, false, stable);
    }
    this.belowSince.delete(t.taskId);
    if (from < min) return want(min, `below min ${min}`, false, stable);
    if (from > max) return want(max, `above max ${max}`, false, stable);
    return want(from, `steady: ${described(stable, `${o.stableWindowMs / 1000} s`, xs)}`, false, stable);
  }

  private targetInFlight(t: TaskSnapshot): number {
    if ('target' in t.policy) return Math.max(EPS, t.policy.target);
    const svc = this.serviceTimeMs.get(t.taskId);
    return svc ? Math.max(1, Math.floor(t.policy.sloMs / svc)) : 1;
  }

  private capacityOf(t: TaskSnapshot): TaskCapacity | undefined {
    const given = this.capacity(t.taskId);
    if (given && given.perExecutorRps > 0) return given;
    const svc = this.serviceTimeMs.get(t.taskId);
    if (!svc) return undefined;
    return { taskId: t.taskId, perExecutorRps: this.targetInFlight(t) / (svc / 1000), source: 'default' };
  }

  private appsOf(taskId: string): string[] {
    return [...this.graphs].filter(([, g]) => (g[taskId] ?? 0) > 0).map(([app]) => app).sort();
  }

  private stats(taskId: string, now: number, windowMs: number): WindowStats {
    const from = now - windowMs;
    const samples = (this.taskSamples.get(taskId) ?? []).filter((s) => s.at > from && s.at <= now);
    const time = samples.reduce((a, s) => a + s.windowMs, 0);
    const arrivalRps = time > 0 ? samples.reduce((a, s) => a + s.arrivalRps * s.windowMs, 0) / time : 0;
    const mean = (f: (s: TaskSample) => number) => (samples.length ? samples.reduce((a, s) => a + f(s), 0) / samples.length : 0);
    let appDemandRps = 0;
    for (const [app, graph] of this.graphs) {
      const perRequest = graph[taskId] ?? 0;
      if (perRequest <= 0) continue;
      const appSamples = (this.appSamples.get(app) ?? []).filter((s) => s.at > from && s.at <= now);
      const appTime = appSamples.reduce((a, s) => a + s.windowMs, 0);
      if (appTime > 0) appDemandRps += (appSamples.reduce((a, s) => a + s.requestRps * s.windowMs, 0) / appTime) * perRequest;
    }
    const appCount = [...this.graphs.keys()].reduce((a, app) => a + (this.appSamples.get(app) ?? []).filter((s) => s.at > from && s.at <= now).length, 0);
    const last = samples[samples.length - 1];
    return { arrivalRps, inFlight: mean((s) => s.inFlight), held: last?.held ?? 0, unsent: last?.unsent ?? 0, queued: last?.queueDepth ?? 0, appDemandRps, samples: samples.length + appCount };
  }

  /** The times of the samples (task and app) that fall in the stable window. */
  private tickTimes(taskId: string, now: number): number[] {
    const from = now - this.options.stableWindowMs;
    const times = new Set((this.taskSamples.get(taskId) ?? []).map((s) => s.at));
    for (const app of this.appsOf(taskId)) for (const s of this.appSamples.get(app) ?? []) times.add(s.at);
    return [...times].filter((at) => at > from && at <= now);
  }

  private prune(now: number): void {
    const keepFrom = now - this.options.stableWindowMs;
    for (const m of [this.taskSamples, this.appSamples] as Array<Map<string, Array<{ at: number }>>>) {
      for (const [id, list] of m) {
        const kept = list.filter((s) => s.at > keepFrom);
        if (kept.length) m.set(id, kept);
        else m.delete(id);
      }
    }
  }
}

function push<T>(m: Map<string, T[]>, key: string, v: T): void {
  const list = m.get(key);
  if (list) list.push(v);
  else m.set(key, [v]);
}

/** ceil that does not turn 2.0000000001 (float noise) into 3. */
const ceil = (x: number) => Math.max(0, Math.ceil(x - 1e-6));
const fmt = (x: number) => (Math.abs(x - Math.round(x)) < 0.05 ? String(Math.round(x)) : x.toFixed(1));
