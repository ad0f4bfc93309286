/**
 * Executor-side load signals (I/O): every autoscaling tick the resource manager asks each ready executor of the
 * running tasks for GET /load (`{queued, in_flight, busy_ms, uptime_ms, max_concurrency?}`; the echo executor serves it,
 * see executors/common/busy-meter.ts) and turns the readings into, per task:
 *   queueDepth       = Σ requests waiting in its executors (past their concurrency limit),
 *   inFlight         = Σ requests its executors hold (served or queued): a queue building shows here at once,
 *   busyFraction     = mean over its executors of Δbusy_ms ÷ Δuptime_ms since this reader's previous reading of it
 *                      (the fraction of time with ≥ 1 request served),
 *   concurrencyLimit = the requests an executor serves at once (absent or null = no limit); the smallest its
 *                      executors report (they share one descriptor). The capacity estimate extrapolates no further.
 * Best effort and bounded: an executor that does not answer within `timeoutMs` adds nothing this tick; one that has
 * no /load (404: other kinds of executor) is not asked again. Decisions never wait on it beyond that bound.
 */
import { z } from 'zod';
import type { ExecutorRoute } from '../../lib/store.js';

const loadReply = z.object({
  queued: z.number().int().min(0),
  in_flight: z.number().int().min(0),
  busy_ms: z.number().min(0),
  uptime_ms: z.number().min(0),
  max_concurrency: z.number().int().positive().nullable().optional(),
});

export interface ExecutorLoad {
  queued: number;
  /** Requests it holds (served or queued); absent when it does not say. */
  inFlight?: number;
  busyMs: number;
  uptimeMs: number;
  /** Requests served at once; absent = no limit. */
  concurrencyLimit?: number;
}

export interface TaskExecutorLoad {
  queueDepth: number;
  /** Σ requests its executors hold (served or queued); absent when none of them says. */
  inFlight?: number;
  /** Executors that said what they hold (the ready ones read this tick). */
  serving: number;
  /** undefined until an executor of the task has been read twice. */
  busyFraction: number | undefined;
  /** The smallest concurrency limit its executors report; absent when none reports one (unlimited). */
  concurrencyLimit?: number;
}

/** Busy fraction between two readings of one executor (undefined without a previous one or after a restart). */
export function busyFractionBetween(prev: ExecutorLoad | undefined, now: ExecutorLoad): number | undefined {
  if (!prev || now.uptimeMs <= prev.uptimeMs || now.busyMs < prev.busyMs) return undefined;
  return Math.min(1, Math.max(0, (now.busyMs - prev.busyMs) / (now.uptimeMs - prev.uptimeMs)));
}

/** Per task, from the readings of its executors this tick (pure). */
export function taskExecutorLoads(readings: Array<{ taskId: string; now: ExecutorLoad; prev: ExecutorLoad | undefined }>): Map<string, TaskExecutorLoad> {
  const acc = new Map<string, { queueDepth: number; inFlight: number | undefined; serving: number; fractions: number[]; limit?: number }>();
  for (const r of readings) {
    const a = acc.get(r.taskId) ?? { queueDepth: 0, inFlight: undefined, serving: 0, fractions: [] };
    a.queueDepth += r.now.queued;
    if (r.now.inFlight !== undefined) {
      a.inFlight = (a.inFlight ?? 0) + r.now.inFlight;
      a.serving++;
    }
    if (r.now.concurrencyLimit !== undefined) a.limit = Math.min(a.limit ?? Infinity, r.now.concurrencyLimit);
    const f = busyFractionBetween(r.prev, r.now);
    if (f !== undefined) a.fractions.push(f);
    acc.set(r.taskId, a);
  }
  return new Map(
    [...acc].map(([taskId, a]) => [
      taskId,
      {
        queueDepth: a.queueDepth,
        ...(a.inFlight !== undefined ? { inFlight: a.inFlight } : {}),
        serving: a.serving,
        busyFraction: a.fractions.length ? a.fractions.reduce((x, y) => x + y, 0) / a.fractions.length : undefined,
        ...(a.limit !== undefined ? { concurrencyLimit: a.limit } : {}),
      },
    ]),
  );
}

export class ExecutorLoadReader {
  /** executorId -> its previous reading */
  private readonly previous = new Map<string, ExecutorLoad>();
  /** Executors without GET /load (not asked again). */
  private readonly silent = new Set<string>();

  constructor(private readonly options: { timeoutMs?: number } = {}) {}

  /** Reads the ready routes' executors at once; resolves within the timeout whatever they do. */
  async read(routes: ExecutorRoute[]): Promise<Map<string, TaskExecutorLoad>> {
    const ready = routes.filter((r) => r.state === 'ready' && !this.silent.has(r.executorId));
    const readings = await Promise.all(ready.map(async (r) => {
      const now = await this.fetchLoad(r);
      if (!now) return undefined;
      const prev = this.previous.get(r.executorId);
      this.previous.set(r.executorId, now);
      return { taskId: r.taskId, now, prev };
    }));
    const live = new Set(routes.map((r) => r.executorId));
    for (const id of this.previous.keys()) if (!live.has(id)) this.previous.delete(id);
    return taskExecutorLoads(readings.filter((r) => r !== undefined));
  }

  private async fetchLoad(route: ExecutorRoute): Promise<ExecutorLoad | undefined> {
    try {
      const res = await fetch(new URL('/load', route.url), { signal: AbortSignal.timeout(this.options.timeoutMs ?? 1000) });
      if (res.status === 404) {
        this.silent.add(route.executorId);
        await res.body?.cancel();
        return undefined;
      }
      if (!res.ok) {
        await res.body?.cancel();
        return undefined;
      }
      const body = loadReply.parse(await res.json());
      return { queued: body.queued, inFlight: body.in_flight, busyMs: body.busy_ms, uptimeMs: body.uptime_ms, ...(body.max_concurrency ? { concurrencyLimit: body.max_concurrency } : {}) };
    } catch {
      return undefined; // slow, gone or not HTTP: nothing from it this tick
    }
  }
}
