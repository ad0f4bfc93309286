/**
 * A request's deadline, the one way every executor reads it: `x-cornserve-deadline` (epoch ms, what the
 * dispatcher sends), or now + `defaultMs` when the header is absent. A header that is not a positive integer is
 * the client's mistake and fails the request with a 400 — never NaN (every wait would end at once) and never a
 * silent default. Each executor may name the error its own way (`invalid`); the default is EXECUTOR_BAD_DEADLINE.
 *
 *   const deadline = deadlineOf(req, opts.defaultTimeoutMs);
 *   const deadline = deadlineOf(req, 300_000, (msg) => geriError(GeriErrorCode.BAD_DEADLINE, msg));
 */
import type { Request } from 'express';
import { DEADLINE_HEADER } from '../../functions/sdk/dispatch.js';
import { ExecutorErrorCode, executorError } from './errors.js';

export function deadlineOf(req: Request, defaultMs: number, invalid: (message: string) => Error = (m) => executorError(ExecutorErrorCode.BAD_DEADLINE, m)): number {
  const h = req.get(DEADLINE_HEADER);
  if (h === undefined) return Date.now() + defaultMs;
  const d = Number(h);
  if (!Number.isSafeInteger(d) || d <= 0) throw invalid(`the ${DEADLINE_HEADER} header must be epoch milliseconds, got '${h.slice(0, 40)}'`);
  return d;
}
