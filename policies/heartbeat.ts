/**
 * Liveness of a peer that answers pings: a process can live while its event loop no longer runs (stopped, stuck
 * in a loop, swapped out), and only an answer proves it works. `answered()` on every reply; `hung` once the peer
 * has been silent for longer than `hungAfterMs`. The clock is injected so the decision is testable without waits.
 */
export class Heartbeat {
  #last: number;

  constructor(private readonly hungAfterMs: number, private readonly now: () => number = Date.now) {
    this.#last = now();
  }

  answered(): void {
    this.#last = this.now();
  }

  /** Milliseconds since the last answer (or since the watch began). */
  silentMs(): number {
    return this.now() - this.#last;
  }

  get hung(): boolean {
    return this.silentMs() > this.hungAfterMs;
  }
}
