/**
 * The real capacity provider for the autoscaler: `provider(taskId)` answers synchronously from a cache that
 * `refresh()` fills from the Store (each task's profile under its unit-task key and device kind, and its executors'
 * live service stats written by the dispatchers). The figure itself is the pure `estimateCapacity`: profile at the
 * policy's target/SLO, overridden by live latency past the margin, else live alone (extrapolated no further than the
 * executors' concurrency limit, from `concurrencyLimitOf`), else undefined (the autoscaler's own default). Call
 * `refresh()` before each decision round, or `start()` to refresh on a timer.
 *
 * Plugging it into the autoscaling loop (control/resources): build one per resource manager and pass its provider,
 *   const capacity = new CapacitySource(store, { deviceKind, policyOf: (id) => policies.get(id) }).start();
 *   new AutoscaleLoop({ ..., capacity: capacity.provider });   // and capacity.stop() when the loop stops
 */
import type { AutoscalePolicy, TaskCapacity, TaskProfile } from '../../lib/autoscale.js';
import { DEFAULT_CAPACITY_OPTIONS, estimateCapacity, type CapacityOptions } from '../../policies/capacity.js';
import type { ExecutorLiveStats } from '../../lib/autoscale.js';
import type { Store } from '../../lib/store.js';

/** The policy a task is read at when the caller knows none: 2 in flight per executor (the autoscaler's default target). */
const FALLBACK_POLICY: AutoscalePolicy = { min: 0, max: Number.MAX_SAFE_INTEGER, target: 2 };

export class CapacitySource {
  private profiles = new Map<string, TaskProfile>(); // by task id
  private live = new Map<string, ExecutorLiveStats[]>(); // by task id

  constructor(
    private readonly store: Store,
    private readonly opts: {
      deviceKind: string;
      /** The task's policy (the profile is read at its target or SLO). @default FALLBACK_POLICY */
      policyOf?: (taskId: string) => AutoscalePolicy | undefined;
      /** Requests one of the task's executors serves at once (their GET /load, read by the autoscaling loop); undefined = no limit. */
      concurrencyLimitOf?: (taskId: string) => number | undefined;
      now?: () => number;
      capacity?: CapacityOptions;
    },
  ) {}

  /** Reads every task's profile and live stats from the Store into the cache. Rejects on a Store failure (the cache stays). */
  async refresh(): Promise<void> {
    const [tasks, profiles, stats] = await Promise.all([this.store.listTasks(), this.store.listProfiles(), this.store.listExecutorStats()]);
    const byKey = new Map(profiles.filter((p) => p.deviceKind === this.opts.deviceKind).map((p) => [p.taskKey, p]));
    const nextProfiles = new Map<string, TaskProfile>();
    for (const t of tasks) {
      const p = byKey.get(t.key);
      if (p) nextProfiles.set(t.taskId, p);
    }
    const nextLive = new Map<string, ExecutorLiveStats[]>();
    for (const s of stats) nextLive.set(s.taskId, [...(nextLive.get(s.taskId) ?? []), s]);
    this.profiles = nextProfiles;
    this.live = nextLive;
  }

  private timer: NodeJS.Timeout | undefined;

  /** Refreshes now and every `intervalMs` (a failed refresh keeps the last cache). Returns this. */
  start(intervalMs = 2000): this {
    const refresh = () => void this.refresh().catch(() => undefined); // a Store outage: the loop pauses on its own signals
    refresh();
    this.timer ??= setInterval(refresh, intervalMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The autoscaler's CapacityProvider: `(taskId) => TaskCapacity | undefined`. */
  readonly provider = (taskId: string): TaskCapacity | undefined => {
    const limit = this.opts.concurrencyLimitOf?.(taskId);
    return estimateCapacity(
      {
        taskId,
        profile: this.profiles.get(taskId),
        live: this.live.get(taskId) ?? [],
        policy: this.opts.policyOf?.(taskId) ?? FALLBACK_POLICY,
        ...(limit !== undefined ? { concurrencyLimit: limit } : {}),
        now: (this.opts.now ?? Date.now)(),
      },
      this.opts.capacity ?? DEFAULT_CAPACITY_OPTIONS,
    );
  };
}
