/**
 * How busy an executor is, for the autoscaler (an executor-side load signal): cumulative time with at least one
 * request being served (past any queue), and the time since start. The reader (control/autoscaler/executor-load.ts)
 * turns two readings into a busy fraction over its own interval, so any number of readers can poll without resets.
 */
export interface BusyReading {
  /** Milliseconds with ≥ 1 request served since start. */
  busyMs: number;
  /** Milliseconds since start. */
  uptimeMs: number;
}

export class BusyMeter {
  private active = 0;
  private busySince: number | undefined;
  private busyMs = 0;
  private readonly startedAt: number;

  constructor(private readonly now: () => number = () => performance.now()) {
    this.startedAt = now();
  }

  /** A request starts being served. */
  begin(): void {
    if (this.active++ === 0) this.busySince = this.now();
  }

  /** A request stops being served (once per begin()). */
  end(): void {
    if (this.active === 0) return;
    if (--this.active === 0) {
      this.busyMs += this.now() - this.busySince!;
      this.busySince = undefined;
    }
  }

  reading(): BusyReading {
    const t = this.now();
    return { busyMs: this.busyMs + (this.busySince === undefined ? 0 : t - this.busySince), uptimeMs: t - this.startedAt };
  }
}
