/**
 * The task manager's health decisions, apart from its I/O: when an executor counts as unhealthy (it must leave
 * the routes) and how long to wait before each restart. Plain code with the time passed in (`now`), so the unit
 * tests use a fake clock and a simulator can run the same rules.
 *
 * Rules:
 *  - a probe the executor answered with anything but 200 is its own verdict (Eric and Geri answer 503
 *    EXECUTOR_ENGINE_DEAD when their engine is gone): unhealthy at once;
 *  - a probe nobody answered (refused, timed out) may be a passing hiccup on a loaded machine: unhealthy after
 *    `unansweredLimit` such probes in a row;
 *  - restart n after a failure waits `initialMs · 2^n`, at most `maxMs`; an executor that stayed ready for
 *    `stableAfterMs` starts again from n = 0.
 */

export interface HealthPolicyOptions {
  /** Unanswered probes in a row that make an executor unhealthy. @default 3 */
  unansweredLimit?: number;
  /** First restart delay. @default 250 */
  initialMs?: number;
  /** Bound on the restart delay. @default 10000 */
  maxMs?: number;
  /** Ready this long resets the backoff. @default 30000 */
  stableAfterMs?: number;
}

/** One health probe's outcome. */
export type ProbeResult =
  | { kind: 'ok' }
  /** The executor answered, with another status (`reason` names it, and the error code it gave). */
  | { kind: 'failed'; reason: string }
  /** Nobody answered: connection refused, reset, or no answer within the probe's timeout. */
  | { kind: 'unanswered'; reason: string };

/** Restart delay number `attempt` (0-based): initialMs · 2^attempt, at most maxMs. */
export function restartDelayMs(attempt: number, { initialMs = 250, maxMs = 10_000 }: Pick<HealthPolicyOptions, 'initialMs' | 'maxMs'> = {}): number {
  return Math.min(maxMs, initialMs * 2 ** Math.min(Math.max(0, attempt), 30));
}

/** The health record of one executor (across its restarts). */
export class ExecutorHealth {
  private unanswered = 0;
  /** Restarts since the executor was last stable: the backoff exponent. */
  private attempt = 0;
  private readyAt: number | undefined;

  constructor(
    private readonly opts: HealthPolicyOptions = {},
    private readonly now: () => number = Date.now,
  ) {}

  /** The executor is (again) ready and serving. */
  ready(): void {
    this.readyAt = this.now();
    this.unanswered = 0;
  }

  /** Feeds one probe of a ready executor; returns why it must leave the routes, or undefined while it is healthy. */
  observe(probe: ProbeResult): string | undefined {
    if (probe.kind === 'ok') {
      this.unanswered = 0;
      return undefined;
    }
    if (probe.kind === 'failed') return probe.reason;
    const limit = this.opts.unansweredLimit ?? 3;
    this.unanswered++;
    return this.unanswered >= limit ? `${this.unanswered} health probes in a row got no answer (last: ${probe.reason})` : undefined;
  }

  /**
   * The executor failed (it died, or observe() judged it unhealthy, or a restart failed): the delay before the
   * next restart. The backoff starts over when it had been ready for stableAfterMs.
   */
  failed(): number {
    if (this.readyAt !== undefined && this.now() - this.readyAt >= (this.opts.stableAfterMs ?? 30_000)) this.attempt = 0;
    this.readyAt = undefined;
    this.unanswered = 0;
    return restartDelayMs(this.attempt++, this.opts);
  }
}
