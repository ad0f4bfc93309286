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
 * LoadReader turns the complete seconds since its last read into TaskLoad / AppLoad for the autoscaler.
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
 * Reads the complete seconds since its last read. A Store failure rejects (the loop then pauses: nothing is
 * decided on stale data); the seconds not read are read next time (up to MAX_LOOKBACK_S).
 */
export class LoadReader {
  private lastSecond: number | undefined;
  /** appId -> taskId -> invocations per request, last known (a quiet window keeps the graph's shape). */
  private readonly shapes = new Map<string, Record<string, number>>();

  constructor(private readonly store: Store) {}

  async read(now: number, taskIds: string[], apps: AppTasks[], routes: ExecutorRoute[]): Promise<{ tasks: TaskLoad[]; apps: AppLoad[] }> {
    const end = secondOf(now); // the current second is not complete: read up to end - 1
    const start = Math.max(this.lastSecond === undefined ? end - 2 : this.lastSecond + 1, end - MAX_LOOKBACK_S);
    const seconds: number[] = [];
    for (let s = start; s < end; s++) seconds.push(s);
    // No complete second since the last read (a tick right after another, e.g. on a wake): held and in-flight still count.
    const windowMs = seconds.length * 1000;
    const names: string[] = [];
    for (const id of taskIds) {
      names.push(counterNames.held(id));
      for (const s of seconds) names.push(counterNames.arrivals(id, s));
    }
    for (const app of apps) {
      for (const s of seconds) names.push(counterNames.requests(app.appId, s));
      for (const id of app.taskIds) for (const s of seconds) names.push(counterNames.invocations(app.appId, id, s));
    }
    const values = await this.store.readCounters(names);
    if (seconds.length > 0) this.lastSecond = end - 1;
    let i = 0;
    const sum = () => seconds.reduce((a) => a + values[i++]!, 0);
    const tasks: TaskLoad[] = taskIds.map((taskId) => {
      const held = Math.max(0, values[i++]!);
      const arrivals = sum();
      const inFlight = routes.filter((r) => r.taskId === taskId).reduce((a, r) => a + Math.max(0, routedOutstanding(r.outstanding)), 0); // a profile's load is no demand
      return { taskId, at: now, windowMs, arrivalRps: windowMs > 0 ? arrivals / (windowMs / 1000) : 0, inFlight: inFlight + held, held };
    });
    const appLoads: AppLoad[] = apps.map((app) => {
      const requests = sum();
      const shape: Record<string, number> = {};
      for (const id of app.taskIds) {
        const invocations = sum();
        if (requests > 0 && invocations > 0) shape[id] = invocations / requests;
      }
      if (requests > 0) this.shapes.set(app.appId, shape);
      return { appId: app.appId, at: now, windowMs, requestRps: windowMs > 0 ? requests / (windowMs / 1000) : 0, invocationsPerRequest: this.shapes.get(app.appId) ?? {} };
    });
    return { tasks, apps: appLoads };
  }
}
