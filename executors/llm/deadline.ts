import type { Request } from 'express';
import { DEADLINE_HEADER } from '../../functions/sdk/dispatch.js';
import { llmErrors } from './errors.js';

/** The request's deadline (epoch ms) from x-cornserve-deadline, or now + defaultMs; a malformed header is a 400. */
export function deadlineOf(req: Request, defaultMs: number): number {
  const h = req.get(DEADLINE_HEADER);
  if (h === undefined) return Date.now() + defaultMs;
  const d = Number(h);
  if (!Number.isFinite(d) || d <= 0) throw llmErrors.badRequest(`the ${DEADLINE_HEADER} header must be epoch milliseconds`, DEADLINE_HEADER);
  return d;
}
