/** Bounded waiting: every wait in the platform ends, either with the value or with a clear error. */

/** The longest delay setTimeout takes (≈ 24.8 days); Node fires a longer one after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export interface DeadlineTimer { clear(): void }

/**
 * Calls `onPassed` once the epoch-ms `deadline` has passed, however far away it is: a delay beyond setTimeout's
 * range is waited in steps of MAX_TIMER_MS (setTimeout alone would fire it after 1 ms). `now` is the clock the
 * deadline is measured on (an injected clock in tests); `unref` lets the process exit while it waits.
 */
export function deadlineTimer(deadline: number, onPassed: () => void, opts: { now?: () => number; unref?: boolean } = {}): DeadlineTimer {
  return new SteppedTimer(deadline, onPassed, opts.now ?? Date.now, opts.unref ?? false);
}

/**
 * deadlineTimer's state as a class rather than closures: several are armed per request, and under tsx every named
 * closure made at run time also gets its name defined on it (esbuild's keepNames), ≈ 0.25 µs each.
 */
class SteppedTimer implements DeadlineTimer {
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly deadline: number,
    private readonly onPassed: () => void,
    private readonly now: () => number,
    private readonly unref: boolean,
  ) {
    this.#arm();
  }

  #arm(): void {
    const left = Math.max(0, this.deadline - this.now());
    const step = Math.min(left, MAX_TIMER_MS);
    this.#timer = setTimeout(step < left ? () => this.#arm() : this.onPassed, step);
    if (this.unref) this.#timer.unref();
  }

  clear(): void {
    clearTimeout(this.#timer);
  }
}

export class TimeoutError extends Error {
  override readonly name = 'TimeoutError';
  constructor(what: string, readonly ms: number) {
    super(`${what} did not complete within ${ms} ms`);
  }
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(() => { signal?.removeEventListener('abort', onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(signal!.reason); };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** Polls `check` until it returns a non-undefined/non-false value or `timeoutMs` passes. */
export async function waitUntil<T>(
  what: string,
  check: () => T | undefined | false | Promise<T | undefined | false>,
  { timeoutMs = 10_000, intervalMs = 25, signal }: { timeoutMs?: number; intervalMs?: number; signal?: AbortSignal } = {},
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() >= end) throw new TimeoutError(what, timeoutMs);
    await sleep(intervalMs, signal);
  }
}

/** Races a promise against a deadline (epoch ms); rejects with TimeoutError when it passes. */
export async function withDeadline<T>(what: string, p: Promise<T>, deadline: number): Promise<T> {
  const ms = Math.max(0, deadline - Date.now());
  let timer: DeadlineTimer | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => { timer = deadlineTimer(deadline, () => reject(new TimeoutError(what, ms))); }),
    ]);
  } finally {
    timer?.clear();
  }
}
