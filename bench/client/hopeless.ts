/**
 * When a run cannot succeed (pure): the first answers all refuse the request the same way, with a client error that
 * sending more of the same request data will not change (a 4xx other than timeouts and rate limits). Such a run is
 * stopped at once instead of being sent to its end.
 */
import type { RequestRecord } from '../metrics/record.js';

/** The answers that decide: this many, the first to complete. */
export const HOPELESS_AFTER = 5;

export interface HopelessRun {
  status: number;
  code: string;
  message: string;
  /** Answers that failed alike. */
  count: number;
}

/** Client errors that more of the same requests could still pass: request timeout, rate limited. */
const TRANSIENT = new Set([408, 429]);

/** The failure the first `n` completed requests share, when they all failed alike with a client error; else undefined. */
export function hopelessRun(completed: readonly RequestRecord[], n = HOPELESS_AFTER): HopelessRun | undefined {
  if (completed.length < n) return undefined;
  const first = completed.slice(0, n);
  const [r] = first;
  const clientError = (x: RequestRecord) => !x.ok && x.status >= 400 && x.status < 500 && !TRANSIENT.has(x.status);
  if (!r || !first.every((x) => clientError(x) && x.status === r.status && x.errorCode === r.errorCode)) return undefined;
  return { status: r.status, code: r.errorCode ?? `HTTP_${r.status}`, message: r.errorMessage ?? '', count: n };
}
