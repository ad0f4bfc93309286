/**
 * The invocations in flight, per app: unregister and shutdown wait for them (bounded) and then cut the rest with
 * a clear error. Each request holds a ticket from begin() until its response closes; a cut aborts the ticket's
 * signal with the error the client is to get (the proxy ends the reply with it).
 *
 *   const ticket = inFlight.begin(appId);   res.on('close', ticket.end);   forward(..., { signal: ticket.signal })
 *   const left = await inFlight.idle(appId, deadline);   if (left) inFlight.cut(appId, new ShuttingDownError(ms));
 */
import { deadlineTimer } from '../../lib/wait.js';

/** How long unregister and shutdown let in-flight requests finish before cutting them. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/**
 * What a cut is told through: the part of AbortSignal the proxy and the routes use (an AbortSignal fits too).
 * The ticket's own is a plain object rather than an AbortController: an AbortController with its EventTarget
 * machinery costs a few microseconds per request on the hot path, for a cut that almost never comes.
 */
export interface CutSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, opts?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** A ticket's signal: its listeners run once, on the first abort(). */
class TicketSignal implements CutSignal {
  aborted = false;
  reason: unknown = undefined;
  #listeners: (() => void)[] | undefined;

  addEventListener(_type: 'abort', listener: () => void): void {
    (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.#listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.#listeners!.splice(at, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners ?? [];
    this.#listeners = undefined;
    for (const listener of listeners) listener();
  }
}

export interface Ticket {
  /** Aborted (with the error for the client) when the request is cut. */
  readonly signal: CutSignal;
  /** The request is over (idempotent). */
  end(): void;
}

export class InFlight {
  readonly #byKey = new Map<string, Set<TicketSignal>>();
  readonly #waiters = new Set<() => void>();

  begin(key: string): Ticket {
    const signal = new TicketSignal();
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
    const sets = key === undefined ? [...this.#byKey.values()] : [this.#byKey.get(key) ?? new Set<TicketSignal>()];
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
