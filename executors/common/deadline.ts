/**
 * A request's deadline, the one way every executor reads it: the `x-cornserve-deadline` header (what the
 * dispatcher sends) by lib/deadline's rule, or now + `defaultMs` when the header is absent. A bad header is the
 * caller's mistake and fails the request with a 400 — never NaN (every wait would end at once) and never a
 * silent default. Each executor may name the error its own way (`invalid`); the default is EXECUTOR_BAD_DEADLINE.
 *
 *   const deadline = deadlineOf(req, opts.defaultTimeoutMs);
 *   const deadline = deadlineOf(req, 300_000, (msg) => geriError(GeriErrorCode.BAD_DEADLINE, msg));
 */
import type { Request } from 'express';
import { DEADLINE_HEADER, parseDeadline } from '../../lib/deadline.js';
import { ExecutorErrorCode, executorError } from '../../lib/executor-errors.js';

export function deadlineOf(req: Request, defaultMs: number, invalid: (message: string) => Error = (m) => executorError(ExecutorErrorCode.BAD_DEADLINE, m)): number {
  return parseDeadline(req.get(DEADLINE_HEADER), { where: `the ${DEADLINE_HEADER} header`, invalid, defaultMs });
}
