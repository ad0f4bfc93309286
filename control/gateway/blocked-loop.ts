/**
 * When is an app function's event loop "blocked"? A process whose loop is stuck (an endless loop in serve())
 * cannot say so itself, so the gateway probes its GET /health from outside and feeds the outcomes here. This is
 * the decision only: plain state and times given by the caller (no timers, no I/O), so it can be tested with
 * an injected clock and reused by a simulator.
 *
 *   const watch = new BlockedLoopWatch({ limitMs: 30_000, tickMs: 1_000 }, now);
 *   watch.answered(now);               // a health probe came back
 *   if (watch.tick(now).kill) ...      // on every watcher tick: blocked for longer than limitMs?
 *
 * A late tick means the WATCHER was stalled (the gateway's own loop was busy, the machine was suspended): that
 * gap is not blamed on the function, so a slow gateway never kills healthy functions.
 */

/** A ready app function whose health probe has not answered for this long is killed and restarted. */
export const DEFAULT_BLOCKED_LIMIT_MS = 30_000;

export interface BlockedLoopLimits {
  /** Kill once no health answer came for this long. */
  limitMs: number;
  /** How often the caller ticks; a tick later than `stallFactor` × this is a stalled watcher. */
  tickMs: number;
  /** @default 3 */
  stallFactor?: number;
}

export interface BlockedLoopVerdict {
  /** How long the function has not answered (watcher stalls excluded). */
  blockedMs: number;
  kill: boolean;
}

export class BlockedLoopWatch {
  #lastAnswer: number;
  #lastTick: number;

  constructor(private readonly limits: BlockedLoopLimits, now: number) {
    this.#lastAnswer = now;
    this.#lastTick = now;
  }

  /** A health probe was answered at `now`: the loop runs. */
  answered(now: number): void {
    this.#lastAnswer = Math.max(this.#lastAnswer, now);
  }

  tick(now: number): BlockedLoopVerdict {
    const gap = now - this.#lastTick;
    this.#lastTick = now;
    // The watcher itself did not run for a while: whatever happened meanwhile cannot be blamed on the function.
    if (gap > this.limits.tickMs * (this.limits.stallFactor ?? 3)) this.#lastAnswer += gap - this.limits.tickMs;
    const blockedMs = Math.max(0, now - this.#lastAnswer);
    return { blockedMs, kill: blockedMs > this.limits.limitMs };
  }
}
