/**
 * The autoscaling loop (I/O) inside the resource manager: every tick (500 ms) it reads the load signals from the
 * Store, asks the pure Autoscaler (control/autoscaler) what each task should have, fits that into the device pool
 * (planPool), and applies the changes through the resource manager's scale (which drains what it removes).
 *
 *  - A Store failure pauses decisions (nothing is scaled on stale data); the next good read resumes them.
 *  - Each task's change runs on its own: a slow start or drain never delays other tasks' decisions; an executor that
 *    fails to start is backed off (1 s · 2^n up to 30 s), and the failure is in its last_decision.
 *  - A task still starting executors is decided again each tick and may get more at once (never fewer until its starts
 *    end): a step that the first tick saw only in part (its sample mixes in the time before the step) is finished on the next
 *    tick, while the first executors are still starting, instead of one start after another.
 *  - Devices moved between tasks (pool full): the donors are scaled down (drained) before the receivers go up; a
 *    scale-up that fits in the devices free now starts at once, while the donors drain.
 *  - A dispatcher holding invocations of a task at zero executors publishes a `wake`: the loop ticks at once.
 *  - Policies, desired counts, the last decision and the last cold start are AutoscaleRecords in the Store, so a
 *    restarted resource manager (Redis) carries on with them.
 */
import { Gauge, type Registry } from 'prom-client';
import { logger } from '../../lib/log.js';
import { Autoscaler, defaultPolicy, type AutoscalerOptions, type CapacityProvider, type TaskWant } from '../../policies/autoscaler.js';
import { planPool, type PoolTask } from '../../policies/pool.js';
import { LoadReader } from '../autoscaler/signals.js';
import type { AutoscalePolicy, TaskCapacity } from '../../lib/autoscale.js';
import type { AutoscalePatch, AutoscaleRecord, ExecutorRoute, Store } from '../../lib/store.js';
import { ExecutorLoadReader, type TaskExecutorLoad } from '../autoscaler/executor-load.js';
import type { AutoscaleStatus } from './types.js';

const log = logger('autoscaler');

/**
 * One decision round every this long. Rates come by complete seconds (a rate over part of a second is noise: one
 * request in 256 ms is not 3.9 req/s); a step shows sooner in the requests the executors hold (GET /load), which
 * every round reads, so the tick bounds how late a step is seen.
 */
export const DEFAULT_TICK_MS = 500;

/** What the loop needs from the resource manager. */
export interface AutoscaleTarget {
  /** The tasks it runs now (ready or not), with their executor counts. */
  runningTasks(): Array<{ taskId: string; executors: number; devicesPerExecutor: number }>;
  /** Devices in the pool (all nodes). */
  poolDevices(): number;
  /** Devices no executor holds now (a draining one still holds its own); absent = none (every scale-up waits for the downs). */
  freeDevices?(): number;
  /** ± executors through the resource manager's scale (drains what it removes). */
  scaleExecutors(taskId: string, deltaExecutors: number): Promise<void>;
}

export interface AutoscaleLoopOptions {
  /** Windows, panic threshold, scale-down delay (tests use short ones). */
  autoscaler?: Partial<AutoscalerOptions>;
  /** Capacity per executor (profiles, live estimates); undefined answers fall back to the Little's-law default. */
  capacity?: CapacityProvider;
  /** @default 500 (a step is decided on within half a second of the tick that shows it) */
  tickMs?: number;
  /** Gauges per task go here. */
  registry?: Registry;
  /** Backoff after a failed scale-up. @default {baseMs: 1000, maxMs: 30000} */
  backoff?: { baseMs?: number; maxMs?: number };
  /** @default Date.now */
  now?: () => number;
}

/** Admin beats app beats default; 'manual' (scaled by hand; always taken) is left alone until an admin policy comes. */
const RANK: Record<AutoscaleRecord['source'], number> = { default: 0, app: 1, manual: 2, admin: 3 };

export class AutoscaleLoop {
  readonly autoscaler: Autoscaler;
  private readonly reader: LoadReader;
  private readonly executorLoad = new ExecutorLoadReader();
  /** taskId -> its executors' queue depth and busy fraction at the last tick */
  private readonly executorSignals = new Map<string, TaskExecutorLoad>();
  /** Each task's policy at the last tick (the capacity estimate reads a task at its own target). */
  private policies = new Map<string, AutoscalePolicy>();
  private readonly tickMs: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  /** taskId -> its scale operations in progress (all of them: several scale-ups can overlap) */
  private readonly busy = new Map<string, Promise<void>>();
  /** taskId -> scale-ups in progress (such a task is still decided, upwards only) */
  private readonly startsInFlight = new Map<string, number>();
  /** taskId -> sequence number of its latest decision (an older scale-up ending later does not record its count) */
  private readonly decisionSeq = new Map<string, number>();
  private readonly backoff = new Map<string, { until: number; attempts: number }>();
  /** Scale-downs draining now (a scale-up that needs their devices waits for them). */
  private readonly drains = new Set<Promise<void>>();
  /**
   * taskId -> devices its scale-up waiting for a drain will take: not free for a later tick, and the task is not
   * decided again until it has them (its count does not show them yet).
   */
  private readonly waitingForDevices = new Map<string, number>();
  /** taskId -> demand and capacity at the last decision */
  private readonly last = new Map<string, { demandRps: number; capacity?: TaskCapacity }>();
  /** Why decisions are paused (Store unreachable), or undefined. */
  paused: string | undefined;
  private readonly gauges: Record<'desired' | 'actual' | 'demand' | 'capacity' | 'coldStart', Gauge<'task_id'>> | undefined;

  constructor(
    private readonly store: Store,
    private readonly target: AutoscaleTarget,
    private readonly options: AutoscaleLoopOptions = {},
  ) {
    this.autoscaler = new Autoscaler(options.autoscaler, options.capacity);
    this.reader = new LoadReader(store);
    this.tickMs = options.tickMs ?? DEFAULT_TICK_MS;
    this.now = options.now ?? Date.now;
    const registers = options.registry ? [options.registry] : undefined;
    if (registers) {
      const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames: ['task_id'], registers });
      this.gauges = {
        desired: gauge('cornserve_autoscale_desired_executors', 'Executors the autoscaler decided per task'),
        actual: gauge('cornserve_autoscale_executors', 'Executors per task at the last decision'),
        demand: gauge('cornserve_autoscale_demand_rps', 'Offered load per task (req/s) at the last decision'),
        capacity: gauge('cornserve_autoscale_capacity_rps', 'Capacity per executor (req/s) the last decision used'),
        coldStart: gauge('cornserve_autoscale_cold_start_seconds', 'Duration of the last start from zero executors'),
      };
    }
  }

  start(): void {
    if (this.timer || this.stopped) return;
    this.unsubscribe = this.store.subscribe((change) => {
      if (change.kind === 'wake') void this.tick();
    });
    this.timer = setInterval(() => void this.tick(), this.tickMs);
    this.timer.unref();
    log.info({ tickMs: this.tickMs, ...this.autoscaler.options }, 'autoscaling on');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    await this.ticking;
    await Promise.allSettled([...this.busy.values()]);
  }

  /** One decision round (serialised: a tick asked for while one runs runs right after it). */
  tick(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.ticking) {
      this.again = true;
      return this.ticking;
    }
    this.ticking = this.round()
      .catch((err: unknown) => log.error({ err }, 'autoscaling round failed'))
      .finally(() => {
        this.ticking = undefined;
        if (this.again) {
          this.again = false;
          void this.tick();
        }
      });
    return this.ticking;
  }

  /** The per-task view `/tasks/list` shows. */
  status(taskId: string, record: AutoscaleRecord | undefined): AutoscaleStatus | undefined {
    if (!record) return undefined;
    const last = this.last.get(taskId);
    return {
      ...(record.policy ? { policy: record.policy } : {}),
      source: record.source,
      desired: record.desired,
      demandRps: last?.demandRps ?? 0,
      ...this.executorSignalsOf(taskId),
      ...(last?.capacity ? { capacity: last.capacity } : {}),
      ...(record.lastDecision ? { lastDecision: record.lastDecision } : {}),
      ...(record.coldStart ? { coldStart: record.coldStart } : {}),
      ...(this.paused ? { paused: this.paused } : {}),
    };
  }

  /**
   * Sets a policy unless one of higher rank is in force (admin > manual > app > default); returns the record kept.
   * The record's desired count stays, except for 'manual' (scaled by hand): it becomes `executors`.
   */
  async setPolicy(taskId: string, policy: AutoscalePolicy | undefined, source: AutoscaleRecord['source'], executors: number): Promise<AutoscaleRecord> {
    // One atomic Store patch: a decision recorded meanwhile (record()) is neither lost nor overwritten.
    const outranks = source === 'admin' || source === 'manual' ? [] : (Object.keys(RANK) as Array<AutoscaleRecord['source']>).filter((s) => RANK[s] > RANK[source]);
    // Scaled by hand: the count it was scaled to is the one desired (an older decision's count would be stale).
    const patch = { source, policy: policy ?? null, ...(source === 'manual' ? { desired: executors } : {}) };
    const record = (await this.store.patchAutoscale(taskId, patch, { create: { taskId, source, desired: executors }, unlessSource: outranks }))!;
    if (record.source !== source) return record; // a policy of higher rank is in force
    if (source === 'manual') this.gauges?.desired.set({ task_id: taskId }, executors);
    log.info({ task: taskId, source, policy: policy ?? 'manual' }, 'autoscaling policy set');
    if (policy) void this.tick();
    return record;
  }

  /**
   * Runs `op` with these tasks out of the loop's decisions (a plan being applied), once their scale operations
   * in progress have ended.
   */
  async holding<T>(taskIds: readonly string[], op: () => Promise<T>): Promise<T> {
    while (taskIds.some((id) => this.busy.has(id))) await Promise.allSettled(taskIds.map((id) => this.busy.get(id)));
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    for (const id of taskIds) this.busy.set(id, held);
    try {
      return await op();
    } finally {
      for (const id of taskIds) if (this.busy.get(id) === held) this.busy.delete(id);
      release();
    }
  }

  /** A plan set this task's executors: the count becomes the desired count the autoscaler starts from (policy kept). */
  async startFrom(taskId: string, from: number, to: number): Promise<void> {
    await this.record(taskId, { desired: to, lastDecision: { at: this.now(), from, to, reason: 'plan applied (cornserve apply-plan)' } });
    this.gauges?.desired.set({ task_id: taskId }, to);
  }

  private async round(): Promise<void> {
    const now = this.now();
    const running = this.target.runningTasks();
    let records: AutoscaleRecord[];
    let loads: Awaited<ReturnType<LoadReader['read']>>;
    let routesNow: ExecutorRoute[] = [];
    let readyIds: Set<string>;
    try {
      const [recs, apps, routes, tasks] = await Promise.all([this.store.listAutoscale(), this.store.listApps(), this.store.listExecutors(), this.store.listTasks()]);
      routesNow = routes;
      records = recs;
      readyIds = new Set(tasks.filter((t) => t.state === 'ready').map((t) => t.taskId));
      const ids = running.map((t) => t.taskId);
      loads = await this.reader.read(now, ids, apps.map((a) => ({ appId: a.appId, taskIds: a.taskIds.filter((id) => ids.includes(id)) })), routes);
    } catch (err) {
      if (!this.paused) log.warn({ err: (err as Error).message }, 'autoscaling paused: the Store cannot be read (nothing is scaled on stale data)');
      this.paused = `the Store cannot be read: ${(err as Error).message}`;
      return;
    }
    if (this.paused) log.info('autoscaling resumed: the Store answers again');
    this.paused = undefined;
    // Executor-side signals (queue depth, busy fraction): bounded, best effort, shown with each task's status.
    const executorLoads = await this.executorLoad.read(routesNow.filter((r) => running.some((t) => t.taskId === r.taskId)));
    for (const id of this.executorSignals.keys()) if (!running.some((t) => t.taskId === id)) this.executorSignals.delete(id);
    for (const l of loads.tasks) {
      const e = executorLoads.get(l.taskId);
      if (!e) continue;
      l.queueDepth = e.queueDepth;
      if (e.inFlight !== undefined) {
        l.executorInFlight = e.inFlight;
        l.executorsServing = e.serving;
      }
      if (e.busyFraction !== undefined) l.busyFraction = e.busyFraction;
      this.executorSignals.set(l.taskId, e);
    }
    this.autoscaler.observe(loads.tasks, loads.apps);

    const pool = this.target.poolDevices();
    const recordOf = new Map(records.map((r) => [r.taskId, r]));
    const policyOf = (t: { taskId: string; devicesPerExecutor: number }): AutoscalePolicy | undefined => {
      const r = recordOf.get(t.taskId);
      if (r?.source === 'manual') return undefined;
      return r?.policy ?? defaultPolicy(Math.floor(pool / t.devicesPerExecutor));
    };
    this.policies = new Map(running.flatMap((t) => { const p = policyOf(t); return p ? [[t.taskId, p] as const] : []; }));
    // Tasks seen for the first time get their default policy recorded (the dispatcher and /tasks/list read it).
    for (const t of running) {
      if (recordOf.has(t.taskId) || !readyIds.has(t.taskId)) continue;
      const record: AutoscaleRecord = { taskId: t.taskId, policy: policyOf(t)!, source: 'default', desired: t.executors };
      // Created only if still absent (a policy set meanwhile through the API wins).
      const kept = await this.store.patchAutoscale(t.taskId, {}, { create: record }).catch((err: unknown) => log.warn({ err, task: t.taskId }, 'cannot record the default policy'));
      recordOf.set(t.taskId, kept ?? record);
    }

    const starting = (taskId: string) => (this.startsInFlight.get(taskId) ?? 0) > 0;
    const auto = running.filter((t) => readyIds.has(t.taskId) && policyOf(t) && !this.waitingForDevices.has(t.taskId) && (!this.busy.has(t.taskId) || starting(t.taskId)));
    const wants = new Map<string, TaskWant>(
      this.autoscaler.decide(now, auto.map((t) => ({ taskId: t.taskId, executors: t.executors, policy: policyOf(t)! }))).map((w) => [w.taskId, w]),
    );
    const poolTasks: PoolTask[] = running.map((t) => {
      const w = wants.get(t.taskId);
      const fixed = { taskId: t.taskId, current: t.executors, want: t.executors, min: t.executors, devicesPerExecutor: t.devicesPerExecutor, demandRps: 0 };
      if (!w) return fixed; // manual, draining, held by a plan or not ready: holds what it has
      const up = starting(t.taskId); // still starting executors: keeps them all, may get more
      return {
        ...fixed,
        want: up ? Math.max(t.executors, w.to) : w.to,
        min: up ? t.executors : Math.min(policyOf(t)!.min, w.to),
        demandRps: w.currentDemandRps,
        ...(w.capacity ? { perExecutorRps: w.capacity.perExecutorRps } : {}),
      };
    });
    const grants = new Map(planPool(poolTasks, pool).map((g) => [g.taskId, g]));

    const downs: Array<Promise<void>> = [];
    const ups: Array<{ taskId: string; devices: number; decision: NonNullable<AutoscaleRecord['lastDecision']> }> = [];
    for (const t of auto) {
      const w = wants.get(t.taskId)!;
      const grant = grants.get(t.taskId)!;
      this.last.set(t.taskId, { demandRps: w.demandRps, ...(w.capacity ? { capacity: w.capacity } : {}) });
      this.gauge(t.taskId, grant.to, t.executors, w);
      if (grant.to === t.executors || (grant.to < t.executors && starting(t.taskId))) continue;
      const backoff = this.backoff.get(t.taskId);
      if (grant.to > t.executors && backoff && backoff.until > now) continue;
      const reason = grant.reason ? `${w.reason}; ${grant.reason}` : w.reason;
      const decision = { at: now, from: t.executors, to: grant.to, reason };
      if (grant.to < t.executors) downs.push(this.apply(t.taskId, decision, Promise.resolve()));
      else ups.push({ taskId: t.taskId, devices: (grant.to - t.executors) * t.devicesPerExecutor, decision });
    }
    // A scale-up that fits in the devices free now starts at once, while the donors drain; one that needs a donor's
    // devices waits for every drain in progress (this tick's and earlier ones': devices moved between tasks are drained
    // before they move), holding its share of what they free so that a later tick does not take it. With no drain in
    // progress there is nothing to wait for: it is decided again next tick, not tried and failed.
    for (const d of downs) {
      this.drains.add(d);
      void d.finally(() => this.drains.delete(d));
    }
    const drainsNow = () => Promise.allSettled([...this.drains]).then(() => undefined);
    if (!this.target.freeDevices) {
      for (const up of ups) void this.apply(up.taskId, up.decision, drainsNow()); // free devices unknown: after the drains
      return;
    }
    let free = this.target.freeDevices() - [...this.waitingForDevices.values()].reduce((a, n) => a + n, 0);
    for (const up of ups) {
      if (up.devices <= free) {
        free -= up.devices;
        void this.apply(up.taskId, up.decision, Promise.resolve());
      } else if (this.drains.size > 0) {
        this.waitingForDevices.set(up.taskId, up.devices);
        const drained = drainsNow().then(() => void this.waitingForDevices.delete(up.taskId));
        void this.apply(up.taskId, up.decision, drained);
      } else {
        log.debug({ task: up.taskId, devices: up.devices }, 'scale-up waits: the pool has no free device and no drain in progress');
      }
    }
  }

  /** Runs one decision (after `after`), records it, backs off a failed scale-up. Never throws. */
  private apply(taskId: string, decision: NonNullable<AutoscaleRecord['lastDecision']>, after: Promise<void>): Promise<void> {
    log.info({ task: taskId, from: decision.from, to: decision.to, reason: decision.reason }, 'autoscale decision');
    const up = decision.to > decision.from;
    const seq = (this.decisionSeq.get(taskId) ?? 0) + 1;
    this.decisionSeq.set(taskId, seq);
    if (up) this.startsInFlight.set(taskId, (this.startsInFlight.get(taskId) ?? 0) + 1);
    const op = (async () => {
      await after;
      const started = this.now();
      try {
        await this.target.scaleExecutors(taskId, decision.to - decision.from);
        this.backoff.delete(taskId);
        const coldStart = decision.from === 0 ? { ms: this.now() - started, at: this.now() } : undefined;
        if (coldStart) {
          log.info({ task: taskId, ms: coldStart.ms }, 'cold start: first executor ready');
          this.gauges?.coldStart.set({ task_id: taskId }, coldStart.ms / 1000);
        }
        // A later decision (more executors for a task still starting some) records its own count.
        if (this.decisionSeq.get(taskId) === seq) await this.record(taskId, { desired: decision.to, lastDecision: decision, ...(coldStart ? { coldStart } : {}) });
        else if (coldStart) await this.record(taskId, { coldStart });
      } catch (err) {
        const attempts = (this.backoff.get(taskId)?.attempts ?? 0) + 1;
        const { baseMs = 1000, maxMs = 30_000 } = this.options.backoff ?? {};
        const waitMs = Math.min(maxMs, baseMs * 2 ** (attempts - 1));
        this.backoff.set(taskId, { until: this.now() + waitMs, attempts });
        const failed = { ...decision, to: decision.from, reason: `${decision.reason}; FAILED to scale to ${decision.to}: ${(err as Error).message}; next attempt in ${waitMs / 1000} s` };
        log.warn({ task: taskId, attempts, waitMs, err: (err as Error).message }, 'autoscale decision failed; backing off');
        await this.record(taskId, { lastDecision: failed });
      }
    })().finally(() => {
      if (up) {
        const n = (this.startsInFlight.get(taskId) ?? 1) - 1;
        if (n > 0) this.startsInFlight.set(taskId, n);
        else this.startsInFlight.delete(taskId);
      }
    });
    // The task stays busy until every operation of it has ended.
    const prev = this.busy.get(taskId);
    const all: Promise<void> = prev ? Promise.allSettled([prev, op]).then(() => undefined) : op;
    this.busy.set(taskId, all);
    void all.finally(() => {
      if (this.busy.get(taskId) === all) this.busy.delete(taskId);
    });
    return op;
  }

  private async record(taskId: string, patch: AutoscalePatch): Promise<void> {
    try {
      // Atomic (a policy set meanwhile stays); a task torn down meanwhile has no record, and none is created.
      await this.store.patchAutoscale(taskId, patch);
    } catch (err) {
      log.warn({ err: (err as Error).message, task: taskId }, 'cannot record the autoscale decision');
    }
  }

  /** The policy in force for the task at the last tick (its own, else the default); undefined = manual or unseen. */
  policyOf(taskId: string): AutoscalePolicy | undefined {
    return this.policies.get(taskId);
  }

  /** The concurrency limit the task's executors reported at the last tick (GET /load); undefined = none (no limit). */
  concurrencyLimitOf(taskId: string): number | undefined {
    return this.executorSignals.get(taskId)?.concurrencyLimit;
  }

  private executorSignalsOf(taskId: string): Pick<AutoscaleStatus, 'queueDepth' | 'busyFraction'> {
    const e = this.executorSignals.get(taskId);
    if (!e) return {};
    return { queueDepth: e.queueDepth, ...(e.busyFraction !== undefined ? { busyFraction: e.busyFraction } : {}) };
  }

  private gauge(taskId: string, desired: number, actual: number, w: TaskWant): void {
    if (!this.gauges) return;
    const labels = { task_id: taskId };
    this.gauges.desired.set(labels, desired);
    this.gauges.actual.set(labels, actual);
    this.gauges.demand.set(labels, w.demandRps);
    this.gauges.capacity.set(labels, w.capacity?.perExecutorRps ?? 0);
  }
}
