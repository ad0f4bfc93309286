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
 * The latest tick alone is read too (what the load needs now): its rates, and the requests the executors hold by their
 *   own report (TaskLoad.executorInFlight) at the target per executor when that is more — a queue building is demand
 *   now, whatever the capacity source; the reason says which figure was used. It enters panic and weighs a full pool.
 * Per task the state is one TaskState: its samples, observed service time, panic mode and scale-down delay (KPA's pieces).
 * Panic (KPA): entered when the panic window (or the latest tick) needs ≥ panicThreshold (2) × the current executors; while in
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
   * Demand (req/s) now: its arrival rate (or app rate × invocations per request) over the last RECENT_MS, or its need now
   * × capacity when more (in-flight without a measured capacity; the requests the executors hold on a clear step, see
   * now()). What a full pool weighs its devices by: a task whose load just fell keeps its executors a stable window
   * long by its own decision, but its spare capacity is judged by the load it has now, so a task whose load just rose
   * gets the devices at once.
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
  executorInFlight: number | undefined;
  executorsServing: number | undefined;
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
  /** Requests the executors hold (their own report), at the window's last sample; undefined when not reported. */
  executorInFlight: number | undefined;
  /** Executors that reported it, at the window's last sample; undefined = all of them. */
  executorsServing: number | undefined;
  appDemandRps: number;
  samples: number;
}

const EPS = 1e-9;
/** A queue at the executors is to be drained within this long by the executors it adds (see need()). */
const BACKLOG_DRAIN_MS = 5_000;
/** A window short enough to hold one sample (the per-tick figure). */
const TICK_SLICE_MS = 1;
/**
 * The rate a full pool weighs a task by is read over this long (two complete seconds): one second of Poisson arrivals is
 * too noisy to move devices by, while a step still shows within it (and at once in the requests held, see now()).
 */
const RECENT_MS = 2_000;
/** The requests held at the executors lead when their queue is more than the executors serve in this long (see now()). */
const QUEUE_LEAD_MS = 500;

/** KPA's panic mode: entered when the short window needs panicThreshold × the current count, held a stable window. */
class PanicMode {
  private until = -Infinity;
  enter(now: number, holdMs: number): void {
    this.until = now + holdMs;
  }
  active(now: number): boolean {
    return this.until > now;
  }
}

/** KPA's scale-down delay: a lower count is taken only once it has been asked for continuously for the delay. */
class ScaleDownDelay {
  private since: number | undefined;
  /** How long (ms) the lower count has been asked for; this call counts as asking. */
  pendingFor(now: number): number {
    this.since ??= now;
    return now - this.since;
  }
  reset(): void {
    this.since = undefined;
  }
}

/** Scale-down hysteresis: the count a need allows going down to, with `tolerance` of headroom (no flapping near a boundary). */
const downTo = (need: number, tolerance: number) => ceil(need * (1 + tolerance));

/** Everything the autoscaler keeps about one task: its load samples over the stable window and its decision state. */
class TaskState {
  samples: TaskSample[] = [];
  /** Little's law over the stable window, the last one known. */
  serviceTimeMs: number | undefined;
  readonly panic = new PanicMode();
  readonly scaleDown = new ScaleDownDelay();

  /** Samples in (now - windowMs, now]. */
  within(now: number, windowMs: number): TaskSample[] {
    const from = now - windowMs;
    return this.samples.filter((s) => s.at > from && s.at <= now);
  }
}

/** What decideOne reads off one window for one task. */
interface Reading {
  stats: WindowStats;
  /** Executors needed. */
  x: number;
  /** Where the figure comes from, for the reason ("6 s", "the latest tick"). */
  over: string;
  /** The requests held at the executors gave the figure (see now()). */
  held?: boolean;
}

export class Autoscaler {
  readonly options: AutoscalerOptions;
  private readonly tasks = new Map<string, TaskState>();
  private readonly appSamples = new Map<string, AppSample[]>();
  /** appId -> taskId -> invocations per request (latest observed) */
  private readonly graphs = new Map<string, Record<string, number>>();

  constructor(
    options: Partial<AutoscalerOptions> = {},
    private readonly capacity: CapacityProvider = () => undefined,
  ) {
    this.options = { ...DEFAULT_AUTOSCALER_OPTIONS, ...options };
  }

  private state(taskId: string): TaskState {
    let s = this.tasks.get(taskId);
    if (!s) this.tasks.set(taskId, (s = new TaskState()));
    return s;
  }

  /** Adds load samples (each covers `windowMs` ending at `at`). Samples older than the stable window are dropped. */
  observe(tasks: TaskLoad[], apps: AppLoad[]): void {
    for (const l of tasks) {
      // In flight cannot exceed what was sent to the task: a reading above every invocation sent over the stable window
      // (held ones included) is no load of ours — a count left behind, a routing weight — and must drive no decision.
      const sent = this.sentWithin(l.taskId, l.at) + (l.arrivalRps * l.windowMs) / 1000;
      const inFlight = Math.min(l.inFlight, Math.max(sent, l.held));
      this.state(l.taskId).samples.push({ at: l.at, windowMs: l.windowMs, arrivalRps: l.arrivalRps, inFlight, unsent: l.inFlight - inFlight, held: l.held, queueDepth: l.queueDepth ?? 0, executorInFlight: l.executorInFlight, executorsServing: l.executorsServing });
    }
    for (const a of apps) {
      push(this.appSamples, a.appId, { at: a.at, windowMs: a.windowMs, requestRps: a.requestRps });
      if (Object.keys(a.invocationsPerRequest).length > 0) this.graphs.set(a.appId, { ...a.invocationsPerRequest });
    }
  }

  /** Invocations that arrived at the task over the stable window ending at `at` (before this sample). */
  private sentWithin(taskId: string, at: number): number {
    const from = at - this.options.stableWindowMs;
    return (this.tasks.get(taskId)?.samples ?? []).filter((s) => s.at > from && s.at < at).reduce((a, s) => a + (s.arrivalRps * s.windowMs) / 1000, 0);
  }

  /** The service time (ms) Little's law gives over the stable window, or the last one known. */
  observedServiceTimeMs(taskId: string): number | undefined {
    return this.tasks.get(taskId)?.serviceTimeMs;
  }

  /** The executor count each task should have now, before the device pool is considered. */
  decide(now: number, tasks: TaskSnapshot[]): TaskWant[] {
    this.prune(now);
    return tasks.map((t) => this.decideOne(now, t, this.state(t.taskId)));
  }

  /** Forgets a task (torn down). */
  forget(taskId: string): void {
    this.tasks.delete(taskId);
  }

  private decideOne(now: number, t: TaskSnapshot, st: TaskState): TaskWant {
    const o = this.options;
    const stats = (windowMs: number) => this.stats(t.taskId, st, now, windowMs);
    const stableStats = stats(o.stableWindowMs);
    if (stableStats.arrivalRps > EPS && stableStats.inFlight > EPS) st.serviceTimeMs = (stableStats.inFlight / stableStats.arrivalRps) * 1000;
    const capacity = this.capacityOf(t, st);
    const need = this.needFn(capacity, this.targetInFlight(t, st));
    const read = (w: WindowStats, over: string): Reading => ({ stats: w, x: need(w), over });
    const stable = read(stableStats, `${o.stableWindowMs / 1000} s`);
    const short = read(stats(o.panicWindowMs), `${o.panicWindowMs / 1000} s`);
    const latest = this.now(stats(TICK_SLICE_MS), need, this.targetInFlight(t, st), t.executors, capacity);
    const recent = stats(RECENT_MS);
    // The panic figure also counts the latest tick alone: a step (an app's rate × its graph) shows there on the first
    // tick after it, while the panic window's mean still mixes in the seconds before the step.
    const panicRead = latest.x > short.x ? latest : short;
    const { min, max } = t.policy;
    const from = t.executors;
    const clamp = (n: number) => Math.min(max, Math.max(min, n));
    const want = (to: number, reason: string, panic: boolean, basis: WindowStats): TaskWant => ({
      taskId: t.taskId,
      from,
      to,
      demandRps: demandOf(basis),
      currentDemandRps: Math.max(demandOf(recent), capacity ? Math.max(need(recent), latest.held ? latest.x : 0) * capacity.perExecutorRps : 0),
      capacity,
      panic,
      apps: this.appsOf(t.taskId),
      reason,
    });
    const described = (r: Reading) => this.described(r, capacity);

    // Panic: a sudden rise (or any demand at zero executors) is answered from the short window.
    const panicNow = short.stats.samples > 0 && (from === 0 ? panicRead.x > EPS : panicRead.x >= o.panicThreshold * from);
    const panicking = st.panic.active(now);
    if (panicNow) st.panic.enter(now, o.stableWindowMs);
    if (panicNow || panicking) {
      st.scaleDown.reset();
      const why = from === 0 ? 'scale from zero' : panicNow ? 'panic' : 'in panic';
      return want(clamp(Math.max(from, ceil(panicRead.x))), `${why}: ${described(panicRead)}`, true, panicRead.stats);
    }

    // Upwards the short window counts too: a rise below the panic threshold (2 executors that now need 2.3) would
    // otherwise wait for the stable window's mean to catch up — a minute or more — while a queue builds. Going up on
    // 6 s of load is safe against noise because coming down still takes the whole stable window (below).
    const upRead = short.stats.samples > 0 && ceil(short.x) > ceil(stable.x) ? short : stable;
    if (ceil(upRead.x) > from) {
      st.scaleDown.reset();
      return want(clamp(ceil(upRead.x)), `load: ${described(upRead)}`, false, upRead.stats);
    }
    // Down only to what the busiest tick of the whole stable window needed: load that just stopped keeps its executors a window long.
    const peak = this.tickTimes(t.taskId, st, now).reduce((m, at) => Math.max(m, need(this.stats(t.taskId, st, at, TICK_SLICE_MS))), stable.x);
    const down = downTo(peak, o.tolerance);
    if (down < from && from > min) {
      const pending = st.scaleDown.pendingFor(now);
      if (pending < o.scaleDownDelayMs) return want(clamp(from), `steady (scale-down to ${clamp(down)} pending for ${fmt(pending / 1000)} s of ${o.scaleDownDelayMs / 1000} s)`, false, stable.stats);
      st.scaleDown.reset();
      const halved = from <= 1 ? 0 : Math.ceil(from / o.maxScaleDownRate);
      const to = clamp(Math.max(down, halved));
      return want(to, `idle capacity: ${described(stable)}${to === halved && halved > down ? ` (at most ÷${o.maxScaleDownRate} per step)` : ''}`, false, stable.stats);
    }
    st.scaleDown.reset();
    if (from < min) return want(min, `below min ${min}`, false, stable.stats);
    if (from > max) return want(max, `above max ${max}`, false, stable.stats);
    return want(from, `steady: ${described(stable)}`, false, stable.stats);
  }

  /**
   * The latest tick's reading: what the load needs now. Rates are read by complete seconds, so the latest may still be
   * the rate before a step; the requests the executors hold show it at once (a queue building is demand now, not after a
   * window), whatever the capacity source. They count at the target per executor when their queue beyond that target
   * is more than the executors serve in QUEUE_LEAD_MS, and when the executors report them
   * (live: GET /load; simulated: what each executor holds). The dispatcher's in-flight does not stand in for them
   * here (it counts invocations still waiting for their producers). The reason names the figure used.
   */
  private now(w: WindowStats, need: (w: WindowStats) => number, target: number, executors: number, capacity: TaskCapacity | undefined): Reading {
    const byLoad = need(w);
    const held = w.executorInFlight;
    // Only a clear step leads: the requests held beyond the executors' target must be more than they serve in
    // QUEUE_LEAD_MS. A burst at a steady rate (a few requests more for a moment) must not move devices between tasks.
    // Judged against the executors serving now: one still starting holds nothing and serves nothing yet, so counting it
    // would hide a queue that keeps growing on the others until the start ends.
    const perSecond = capacity && capacity.perExecutorRps > 0 ? capacity.perExecutorRps : 0;
    const serving = Math.min(executors, w.executorsServing ?? executors);
    const step = held !== undefined && perSecond > 0 && held - serving * target > serving * perSecond * (QUEUE_LEAD_MS / 1000);
    if (!step || held / target <= byLoad + EPS) return { stats: w, x: byLoad, over: 'the latest tick' };
    return { stats: w, x: held / target, held: true, over: `the latest tick (${fmt(held)} held at the executors ÷ target ${fmt(target)}, above the rate's ${fmt(byLoad)})` };
  }

  /** Executors a window's load needs, given the task's capacity per executor and target in-flight. */
  private needFn(capacity: TaskCapacity | undefined, target: number): (w: WindowStats) => number {
    const perExecutorRps = capacity && capacity.perExecutorRps > 0 ? capacity.perExecutorRps : 0;
    return (w) => {
      const byRate = perExecutorRps ? demandOf(w) / perExecutorRps : 0;
      // A measured capacity (profile, or live service times) already says what one executor serves at the policy's
      // target: demand ÷ it is the need. In-flight ÷ target is then no second measure: in-flight swings with every
      // burst (an encoder read at 1 in flight asks for an executor per queued request) and counts invocations leased
      // to the task that still wait for their producers (a generator's, for the whole LLM call before it), which
      // more executors of the task would not serve sooner. Without one (the Little's-law default), it is the signal.
      // A queue the executors report waiting past their concurrency is work demand ÷ capacity does not see (a rate
      // just above capacity reads as capacity, since arrivals are what got through): the executors that would drain it
      // within BACKLOG_DRAIN_MS are added.
      const backlog = perExecutorRps ? w.queued / (perExecutorRps * (BACKLOG_DRAIN_MS / 1000)) : 0;
      const x = capacity && capacity.source !== 'default' ? byRate + backlog : Math.max(byRate + backlog, w.inFlight / target);
      return w.held > 0 ? Math.max(x, 1) : x; // held invocations need at least one executor
    };
  }

  private described(r: Reading, capacity: TaskCapacity | undefined): string {
    const w = r.stats;
    return (
      `demand ${fmt(demandOf(w))} req/s` +
      (w.appDemandRps > w.arrivalRps + EPS ? ` (from app rates × invocations per request)` : '') +
      `, in-flight ${fmt(w.inFlight)}` +
      (w.unsent > 0 ? ` (${fmt(w.unsent)} more reported than were sent in ${this.options.stableWindowMs / 1000} s: not counted)` : '') +
      (w.queued > 0 ? `, ${fmt(w.queued)} queued at the executors` : '') +
      (capacity ? `, ${fmt(capacity.perExecutorRps)} req/s per executor (${capacity.source})` : '') +
      ` over ${r.over} → ${fmt(r.x)} executors`
    );
  }

  private targetInFlight(t: TaskSnapshot, st: TaskState): number {
    if ('target' in t.policy) return Math.max(EPS, t.policy.target);
    return st.serviceTimeMs ? Math.max(1, Math.floor(t.policy.sloMs / st.serviceTimeMs)) : 1;
  }

  private capacityOf(t: TaskSnapshot, st: TaskState): TaskCapacity | undefined {
    const given = this.capacity(t.taskId);
    if (given && given.perExecutorRps > 0) return given;
    if (!st.serviceTimeMs) return undefined;
    return { taskId: t.taskId, perExecutorRps: this.targetInFlight(t, st) / (st.serviceTimeMs / 1000), source: 'default' };
  }

  private appsOf(taskId: string): string[] {
    return [...this.graphs].filter(([, g]) => (g[taskId] ?? 0) > 0).map(([app]) => app).sort();
  }

  private stats(taskId: string, st: TaskState, now: number, windowMs: number): WindowStats {
    const from = now - windowMs;
    const samples = st.within(now, windowMs);
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
    return { arrivalRps, inFlight: mean((s) => s.inFlight), held: last?.held ?? 0, unsent: last?.unsent ?? 0, queued: last?.queueDepth ?? 0, executorInFlight: last?.executorInFlight, executorsServing: last?.executorsServing, appDemandRps, samples: samples.length + appCount };
  }

  /** The times of the samples (task and app) that fall in the stable window. */
  private tickTimes(taskId: string, st: TaskState, now: number): number[] {
    const from = now - this.options.stableWindowMs;
    const times = new Set(st.samples.map((s) => s.at));
    for (const app of this.appsOf(taskId)) for (const s of this.appSamples.get(app) ?? []) times.add(s.at);
    return [...times].filter((at) => at > from && at <= now);
  }

  private prune(now: number): void {
    const keepFrom = now - this.options.stableWindowMs;
    for (const st of this.tasks.values()) st.samples = st.samples.filter((s) => s.at > keepFrom);
    for (const [id, list] of this.appSamples) {
      const kept = list.filter((s) => s.at > keepFrom);
      if (kept.length) this.appSamples.set(id, kept);
      else this.appSamples.delete(id);
    }
  }
}

/** Demand (req/s) of a window: the task's own arrivals, or the apps' rates × invocations per request when more. */
const demandOf = (w: WindowStats) => Math.max(w.arrivalRps, w.appDemandRps);

function push<T>(m: Map<string, T[]>, key: string, v: T): void {
  const list = m.get(key);
  if (list) list.push(v);
  else m.set(key, [v]);
}

/** ceil that does not turn 2.0000000001 (float noise) into 3. */
const ceil = (x: number) => Math.max(0, Math.ceil(x - 1e-6));
const fmt = (x: number) => (Math.abs(x - Math.round(x)) < 0.05 ? String(Math.round(x)) : x.toFixed(1));
