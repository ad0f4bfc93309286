/**
 * Load signals through the Store (I/O), so every dispatcher and gateway replica adds to the same figures:
 * per-second counters (Store.addCounters, atomic, expiring by themselves) of
 *   - task arrivals at the dispatchers           `arr:<taskId>:<second>`
 *   - app requests at the gateways               `req:<appId>:<second>`
 *   - task invocations in each app's graphs       `inv:<appId>:<taskId>:<second>` (the dispatcher sees the app id
 *                                                 in the CloudEvent source)
 * and one counter of invocations held by dispatchers for a task with no executor, `held:<taskId>`.
 * In-flight per task is the sum of its routes' `outstanding` (already counted atomically by every dispatcher), less
 * the profiler's routing weight on an executor being profiled.
 *
 * Recorders batch in memory and flush every `flushMs` (one Store call per flush, off the request path);
 * LoadReader turns what the counters gained since its last read into TaskLoad / AppLoad for the autoscaler.
 */
import { logger } from '../../lib/log.js';
import type { ExecutorRoute, Store } from '../../lib/store.js';
import type { AppLoad, TaskLoad } from '../../lib/autoscale.js';
import { routedOutstanding } from '../taskmanager/profiler-run.js';

const log = logger('autoscaler');

/** Counters live this long after their last write (longer than any window read back). */
export const COUNTER_TTL_MS = 120_000;
/** The reader looks back at most this far (after a pause, older seconds are not worth reading). */
const MAX_LOOKBACK_S = 60;
/** A second's counters are final this long after it ends (the recorders flush every 250 ms; a slow flush has the rest). */
const SETTLE_MS = 1000;
/** Reads closer together than this only refresh held and in-flight (a rate over a few ms is noise). */
const MIN_WINDOW_MS = 100;
/** The graph's shape (invocations per request) is taken over this long. */
const SHAPE_WINDOW_MS = 10_000;

export const counterNames = {
  arrivals: (taskId: string, second: number) => `arr:${taskId}:${second}`,
  requests: (appId: string, second: number) => `req:${appId}:${second}`,
  invocations: (appId: string, taskId: string, second: number) => `inv:${appId}:${taskId}:${second}`,
  held: (taskId: string) => `held:${taskId}`,
};

const secondOf = (ms: number) => Math.floor(ms / 1000);

/** Batches counter increments and flushes them to the Store every `flushMs`. */
export class LoadRecorder {
  private pending = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly store: Pick<Store, 'addCounters'>,
    private readonly options: { flushMs?: number; now?: () => number } = {},
  ) {
    this.timer = setInterval(() => void this.flush(), options.flushMs ?? 250);
    this.timer.unref();
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private add(name: string, delta: number): void {
    this.pending.set(name, (this.pending.get(name) ?? 0) + delta);
  }

  /** One graph dispatched: each unit-task invocation arrives at its task, and counts toward the app's graph shape. */
  graph(appId: string | undefined, taskIds: string[]): void {
    const second = secondOf(this.now());
    for (const taskId of taskIds) {
      this.add(counterNames.arrivals(taskId, second), 1);
      if (appId) this.add(counterNames.invocations(appId, taskId, second), 1);
    }
  }

  /** One app request at the gateway. */
  request(appId: string): void {
    this.add(counterNames.requests(appId, secondOf(this.now())), 1);
  }

  /** Writes what is pending (one Store call). A Store failure drops the batch: load figures are best effort. */
  flush(): Promise<void> {
    if (this.flushing || this.pending.size === 0) return this.flushing ?? Promise.resolve();
    const batch = [...this.pending].map(([name, delta]) => ({ name, delta }));
    this.pending = new Map();
    this.flushing = this.store
      .addCounters(batch, COUNTER_TTL_MS)
      .catch((err: unknown) => log.debug({ err: (err as Error).message }, 'load counters not written'))
      .finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  close(): Promise<void> {
    clearInterval(this.timer);
    return this.flush();
  }
}

/** What the reader needs to know about the apps: their ids and the unit tasks they use. */
export interface AppTasks {
  appId: string;
  taskIds: string[];
}

/**
 * Reads what the counters gained since its last read, the current (open) second included, so each tick's sample covers
 * exactly the time since the previous tick and a step shows on the first tick after it (reading complete seconds
 * only, a tick could see none of the new rate). A counter still open to writes (its second not yet SETTLE_MS old:
 * the recorders flush every 250 ms) is read again next time for what it gained since. A Store failure rejects (the
 * loop then pauses: nothing is decided on stale data); what was not read is read next time (up to MAX_LOOKBACK_S).
 */
export class LoadReader {
  private readAt: number | undefined;
  /** The last second read and final: later reads start after it. */
  private settled: number | undefined;
  /** counter name -> the value already counted, for the seconds read but not yet final */
  private consumed = new Map<string, { second: number; value: number }>();
  /** appId -> recent (requests, invocations per task), for the graph's shape over SHAPE_WINDOW_MS. */
  private readonly recent = new Map<string, Array<{ at: number; requests: number; invocations: Record<string, number> }>>();
  /** appId -> taskId -> invocations per request, last known (a quiet window keeps the graph's shape). */
  private readonly shapes = new Map<string, Record<string, number>>();

  constructor(private readonly store: Store) {}

  async read(now: number, taskIds: string[], apps: AppTasks[], routes: ExecutorRoute[]): Promise<{ tasks: TaskLoad[]; apps: AppLoad[] }> {
    const current = secondOf(now);
    const first = Math.max(this.settled === undefined ? current - 2 : this.settled + 1, current - MAX_LOOKBACK_S);
    const since = Math.max(this.readAt ?? -Infinity, first * 1000);
    // Too soon after the last read (a tick right after another, e.g. on a wake): held and in-flight still count.
    const windowMs = now - since >= MIN_WINDOW_MS ? now - since : 0;
    const seconds: number[] = [];
    if (windowMs > 0) for (let s = first; s <= current; s++) seconds.push(s);
    const names: string[] = [];
    const seconded: number[] = []; // the second of each per-second name, in order
    const perSecond = (name: (s: number) => string) => {
      for (const s of seconds) {
        names.push(name(s));
        seconded.push(s);
      }
    };
    for (const id of taskIds) {
      names.push(counterNames.held(id));
      seconded.push(NaN);
      perSecond((s) => counterNames.arrivals(id, s));
    }
    for (const app of apps) {
      perSecond((s) => counterNames.requests(app.appId, s));
      for (const id of app.taskIds) perSecond((s) => counterNames.invocations(app.appId, id, s));
    }
    const values = await this.store.readCounters(names);
    // What each counter gained since it was last read; counters still open keep their value for the next read.
    const gained = values.map((v, k) => {
      const second = seconded[k]!;
      if (Number.isNaN(second)) return v;
      const was = this.consumed.get(names[k]!);
      this.consumed.set(names[k]!, { second, value: v });
      return v - (was && was.second === second ? was.value : 0);
    });
    if (windowMs > 0) {
      this.readAt = now;
      this.settled = Math.max(this.settled ?? -Infinity, secondOf(now - SETTLE_MS) - 1);
      for (const [name, c] of this.consumed) if (c.second <= this.settled) this.consumed.delete(name);
    }
    let i = 0;
    const sum = () => seconds.reduce((a) => a + gained[i++]!, 0);
    const rate = (n: number) => (windowMs > 0 ? n / (windowMs / 1000) : 0);
    const tasks: TaskLoad[] = taskIds.map((taskId) => {
      const held = Math.max(0, gained[i++]!);
      const arrivals = sum();
      const inFlight = routes.filter((r) => r.taskId === taskId).reduce((a, r) => a + Math.max(0, routedOutstanding(r.outstanding)), 0); // a profile's load is no demand
      return { taskId, at: now, windowMs, arrivalRps: rate(arrivals), inFlight: inFlight + held, held };
    });
    const appLoads: AppLoad[] = apps.map((app) => {
      const requests = sum();
      const invocations: Record<string, number> = {};
      for (const id of app.taskIds) invocations[id] = sum();
      return { appId: app.appId, at: now, windowMs, requestRps: rate(requests), invocationsPerRequest: this.shapeOf(app, now, requests, invocations) };
    });
    return { tasks, apps: appLoads };
  }

  /**
   * The app's graph shape (invocations per request) over the last SHAPE_WINDOW_MS: a sample of a fraction of a second
   * holds requests whose invocations the dispatcher counts in the next one, so one tick alone would be a noisy ratio.
   */
  private shapeOf(app: AppTasks, now: number, requests: number, invocations: Record<string, number>): Record<string, number> {
    const recent = (this.recent.get(app.appId) ?? []).filter((r) => r.at > now - SHAPE_WINDOW_MS);
    if (requests > 0 || Object.values(invocations).some((n) => n > 0)) recent.push({ at: now, requests, invocations });
    this.recent.set(app.appId, recent);
    const total = recent.reduce((a, r) => a + r.requests, 0);
    if (total > 0) {
      const shape: Record<string, number> = {};
      for (const id of app.taskIds) {
        const n = recent.reduce((a, r) => a + (r.invocations[id] ?? 0), 0);
        if (n > 0) shape[id] = n / total;
      }
      this.shapes.set(app.appId, shape);
    }
    return this.shapes.get(app.appId) ?? {};
  }
}
