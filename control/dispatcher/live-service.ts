/**
 * Live service times: the dispatcher folds each completed (non-streaming, successful) executor call into that
 * executor's EWMAs of latency and of in-flight calls at its start (foldLiveSample, policies/capacity.ts)
 * and writes the executors that changed to the Store about once a second, where the capacity estimate reads them
 * (an old profile must not mislead). Several dispatcher replicas each write their own estimate of the same executor;
 * the latest write wins, which is fine for an average of the same quantity.
 */
import { logger } from '../../lib/log.js';
import { foldLiveSample } from '../../policies/capacity.js';
import type { ExecutorLiveStats } from '../../lib/autoscale.js';
import type { Store } from '../../lib/store.js';
import { PROFILING_WEIGHT } from '../taskmanager/profiler-run.js';

const log = logger('dispatcher');

export class LiveServiceRecorder {
  private readonly stats = new Map<string, ExecutorLiveStats>();
  private readonly dirty = new Set<string>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> | undefined;

  constructor(
    private readonly store: Pick<Store, 'putExecutorStats'>,
    private readonly opts: { flushMs?: number; now?: () => number } = {},
  ) {
    this.timer = setInterval(() => void this.flush(), opts.flushMs ?? 1000);
    this.timer.unref();
  }

  /** One completed call; `concurrency` = the executor's outstanding calls when it started, this one included. */
  observe(executorId: string, taskId: string, latencyMs: number, concurrency: number): void {
    // An executor being profiled carries PROFILING_WEIGHT extra outstanding (profiler-run.ts): its live calls say nothing clean.
    if (concurrency >= PROFILING_WEIGHT) return;
    this.stats.set(executorId, foldLiveSample(this.stats.get(executorId), { executorId, taskId, latencyMs, concurrency }, (this.opts.now ?? Date.now)()));
    this.dirty.add(executorId);
  }

  /** Writes the executors observed since the last flush. */
  flush(): Promise<void> {
    this.flushing ??= (async () => {
      const ids = [...this.dirty];
      this.dirty.clear();
      try {
        await Promise.all(ids.map((id) => this.store.putExecutorStats(this.stats.get(id)!)));
      } catch (err) {
        log.debug({ err }, 'cannot write live service stats; the next flush tries again');
        for (const id of ids) this.dirty.add(id);
      }
    })().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  close(): void {
    clearInterval(this.timer);
  }
}
