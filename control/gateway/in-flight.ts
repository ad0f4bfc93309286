/**
 * The invocations in flight, per app: unregister and shutdown wait for them (bounded) and then cut the rest with
 * a clear error. Each request holds a ticket from begin() until its response closes; a cut aborts the ticket's
 * signal (a Cut, lib/cut-signal.ts: no AbortController per request) with the error the client is to get (the proxy
 * ends the reply with it).
 *
 *   const ticket = inFlight.begin(appId);   res.on('close', ticket.end);   forward(..., { signal: ticket.signal })
 *   const left = await inFlight.idle(appId, deadline);   if (left) inFlight.cut(appId, new ShuttingDownError(ms));
 */
import { Cut, type CutSignal } from '../../lib/cut-signal.js';
import { deadlineTimer } from '../../lib/wait.js';

/** How long unregister and shutdown let in-flight requests finish before cutting them. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

export interface Ticket {
  /** Aborted (with the error for the client) when the request is cut. */
  readonly signal: CutSignal;
  /** The request is over (idempotent). */
  end(): void;
}

export class InFlight {
  readonly #byKey = new Map<string, Set<Cut>>();
  readonly #waiters = new Set<() => void>();

  begin(key: string): Ticket {
    const signal = new Cut();
    let set = this.#byKey.get(key);
    if (!set) this.#byKey.set(key, (set = new Set()));
    set.add(signal);
    let ended = false;
    return {
      signal,
      end: () => {
        if (ended) return;
        ended = true;
        set.delete(signal);
        if (set.size === 0 && this.#byKey.get(key) === set) this.#byKey.delete(key);
        for (const wake of this.#waiters) wake();
      },
    };
  }

  /** Requests in flight for `key`, or for every key when undefined. */
  count(key?: string): number {
    if (key !== undefined) return this.#byKey.get(key)?.size ?? 0;
    let n = 0;
    for (const set of this.#byKey.values()) n += set.size;
    return n;
  }

  /** Resolves with 0 once nothing of `key` (anything, when undefined) is in flight, or with how many are left at `deadline`. */
  idle(key: string | undefined, deadline: number): Promise<number> {
    return new Promise((resolve) => {
      if (this.count(key) === 0) return resolve(0);
      const done = (left: number) => {
        this.#waiters.delete(wake);
        timer.clear();
        resolve(left);
      };
      const wake = () => {
        if (this.count(key) === 0) done(0);
      };
      const timer = deadlineTimer(deadline, () => done(this.count(key)));
      this.#waiters.add(wake);
    });
  }

  /** Aborts every request of `key` (all, when undefined) with `reason`; returns how many. */
  cut(key: string | undefined, reason: Error): number {
    const sets = key === undefined ? [...this.#byKey.values()] : [this.#byKey.get(key) ?? new Set<Cut>()];
    let n = 0;
    for (const set of sets)
      for (const s of set) {
        if (s.aborted) continue;
        s.abort(reason);
        n += 1;
      }
    return n;
  }
}
