/**
 * A FIFO limit on concurrent work: at most `limit` holders at once, the rest wait in arrival order.
 * The echo executor serves with it, so an echo executor has an exact, known capacity (limit ÷ service time).
 */
export class ConcurrencySlots {
  private held = 0;
  private readonly waiting: Array<{ grant: () => void; signal: AbortSignal | undefined; onAbort: () => void }> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`the concurrency limit must be a positive integer, got ${limit}`);
  }

  /** Requests waiting for a slot. */
  get queued(): number {
    return this.waiting.length;
  }

  get active(): number {
    return this.held;
  }

  /** Resolves once a slot is held (call `release` exactly once after); rejects with the signal's reason if aborted while waiting. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.held < this.limit && this.waiting.length === 0) {
      this.held++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          signal?.removeEventListener('abort', entry.onAbort);
          this.held++;
          resolve();
        },
        signal,
        onAbort: () => {
          const i = this.waiting.indexOf(entry);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(signal!.reason);
        },
      };
      signal?.addEventListener('abort', entry.onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  release(): void {
    if (this.held === 0) throw new Error('release without a held slot');
    this.held--;
    // A caller gone while queued already left the queue (onAbort), so the next in line is always live.
    if (this.held < this.limit) this.waiting.shift()?.grant();
  }
}
