/**
 * Shared memory the sidecar lent this client with put replies (see `Lease` in wire/protocol.ts). A large send
 * that finds a lease big enough copies straight into it and commits with one round trip (put) instead of two
 * (alloc, put). Leases unused for `idleMs` are given back, so an idle client holds no memory; the sidecar
 * frees whatever a client still holds when it disconnects.
 */
import type { Lease } from '../wire/protocol.js';

export class Leases {
  private readonly held: Array<Lease & { at: number }> = [];
  private timer: NodeJS.Timeout | undefined;

  /** `idleMs` 0: no leases. */
  constructor(private readonly giveBack: (alloc: number) => void, private readonly idleMs = 250, private readonly max = 4) {}

  /** Whether to ask for another lease with the next put. */
  get wanted(): boolean { return this.idleMs > 0 && this.held.length < this.max; }

  /** The smallest lease holding at least `size` bytes (removed from the pool), if any. */
  take(size: number): Lease | undefined {
    let best = -1;
    for (let i = 0; i < this.held.length; i++) {
      const l = this.held[i]!;
      if (l.bytes >= size && (best < 0 || l.bytes < this.held[best]!.bytes)) best = i;
    }
    if (best < 0) return undefined;
    const { alloc, offset, bytes } = this.held.splice(best, 1)[0]!;
    return { alloc, offset, bytes };
  }

  add(lease: Lease): void {
    this.held.push({ ...lease, at: Date.now() });
    this.timer ??= setTimeout(() => this.sweep(), this.idleMs).unref();
  }

  private sweep(): void {
    this.timer = undefined;
    const now = Date.now();
    for (let i = this.held.length - 1; i >= 0; i--) {
      if (now - this.held[i]!.at >= this.idleMs) this.giveBack(this.held.splice(i, 1)[0]!.alloc);
    }
    if (this.held.length > 0) this.timer = setTimeout(() => this.sweep(), this.idleMs).unref();
  }

  /** The connection is gone (the sidecar freed everything it lent on it). */
  clear(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.held.length = 0;
  }
}
