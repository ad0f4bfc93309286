/**
 * The open-loop runner: sends request i at its arrival time whatever the server is doing (a slow server never
 * slows the arrival process), unless --max-concurrency caps the requests in flight (then a request waits for a
 * slot, as in vLLM's benchmark). Every request sent ends up as one RequestRecord, failures included. `stop()`
 * (Ctrl-C) stops sending, waits for the requests in flight up to `drainTimeoutMs`, then cancels the rest
 * (recorded as CANCELLED), so partial results are complete about what was sent.
 */
import type { RequestRecord } from '../metrics/record.js';
import type { PreparedRequest } from '../workload/requests.js';
import type { Target } from './senders.js';

export interface RunOptions {
  target: Target;
  /** Arrival times in ms from the start (an endless iterator; the limit below ends the run). */
  arrivals: Iterator<number>;
  /** Request i's body (called just before its arrival time). */
  request: (index: number) => PreparedRequest;
  limit: { count?: number; durationMs?: number };
  maxConcurrency?: number;
  /** Client-side bound on one request. */
  requestTimeoutMs: number;
  /** After stop(): how long the requests in flight may still take. */
  drainTimeoutMs: number;
  onSent?: (index: number) => void;
  onDone?: (record: RequestRecord) => void;
}

export interface RunResult {
  records: RequestRecord[];
  /** Epoch ms of the first send. */
  startedAt: number;
  /** True when stop() ended the run early. */
  interrupted: boolean;
}

export interface Run {
  readonly done: Promise<RunResult>;
  /** Requests sent and not yet finished. */
  inFlight(): number;
  sent(): number;
  /** Stops sending; the in-flight requests get drainTimeoutMs (a second call cancels them at once). */
  stop(): void;
}

/** Resolves at `at` (performance.now() ms) or when `signal` aborts. */
function sleepUntil(at: number, signal: AbortSignal): Promise<void> {
  const ms = at - performance.now();
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export function startRun(o: RunOptions): Run {
  const stopSending = new AbortController();
  const cancelInFlight = new AbortController();
  const records: RequestRecord[] = [];
  const pending = new Set<Promise<void>>();
  let inFlight = 0;
  let sent = 0;
  let interrupted = false;
  let drainTimer: NodeJS.Timeout | undefined;
  const slotWaiters: Array<() => void> = [];
  const start = performance.now();
  const startedAt = Date.now();

  const acquireSlot = async () => {
    while (o.maxConcurrency !== undefined && inFlight >= o.maxConcurrency && !stopSending.signal.aborted) {
      await new Promise<void>((r) => slotWaiters.push(r));
    }
  };
  stopSending.signal.addEventListener('abort', () => slotWaiters.splice(0).forEach((r) => r()), { once: true });

  const fire = (req: PreparedRequest, scheduledMs: number) => {
    const sentMs = performance.now() - start;
    const timeout = AbortSignal.timeout(o.requestTimeoutMs);
    const signal = AbortSignal.any([cancelInFlight.signal, timeout]);
    inFlight++;
    sent++;
    o.onSent?.(req.index);
    const p = o.target
      .send(req.body, { signal, abortCode: () => (timeout.aborted ? 'CLIENT_TIMEOUT' : 'CANCELLED') })
      .then((m) => {
        const record: RequestRecord = { index: req.index, kind: req.kind, scheduledMs, sentMs, inputTokens: req.inputTokens, ...m };
        records.push(record);
        o.onDone?.(record);
      })
      .finally(() => {
        inFlight--;
        pending.delete(p);
        slotWaiters.shift()?.();
      });
    pending.add(p);
  };

  const done = (async (): Promise<RunResult> => {
    for (let i = 0; !stopSending.signal.aborted; i++) {
      if (o.limit.count !== undefined && i >= o.limit.count) break;
      const at = o.arrivals.next().value as number;
      if (o.limit.durationMs !== undefined && at >= o.limit.durationMs) break;
      const req = o.request(i);
      await sleepUntil(start + at, stopSending.signal);
      await acquireSlot();
      if (stopSending.signal.aborted) break;
      // A slot can free after the duration (e.g. --request-rate inf with --max-concurrency): the clock ends the run.
      if (o.limit.durationMs !== undefined && performance.now() - start >= o.limit.durationMs) break;
      fire(req, at);
    }
    // Every request is bounded by its own timeout; after stop(), also by the drain bound (then cancelled).
    while (pending.size) await Promise.all([...pending]);
    clearTimeout(drainTimer);
    records.sort((a, b) => a.index - b.index);
    return { records, startedAt, interrupted };
  })();

  return {
    done,
    inFlight: () => inFlight,
    sent: () => sent,
    stop() {
      if (interrupted) return cancelInFlight.abort();
      interrupted = true;
      stopSending.abort();
      drainTimer = setTimeout(() => cancelInFlight.abort(), o.drainTimeoutMs);
    },
  };
}
