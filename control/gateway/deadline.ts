/** The deadline of a gateway request: header `x-cornserve-deadline` (epoch ms), or `?timeout_ms=`, or 5 minutes (lib/deadline's rule). */
import type { Request } from 'express';
import { DEADLINE_HEADER, deadlineAfter, parseDeadline } from '../../lib/deadline.js';
import { BadRequestError } from './errors.js';

const invalid = (message: string) => new BadRequestError(message);

export function requestDeadline(req: Request, now = Date.now()): number {
  const header = req.headers[DEADLINE_HEADER];
  if (header !== undefined) return parseDeadline(header, { where: `the ${DEADLINE_HEADER} header`, invalid, now });
  const timeout = req.query.timeout_ms;
  if (timeout !== undefined) return deadlineAfter(timeout, { where: 'timeout_ms', invalid, now });
  return parseDeadline(undefined, { where: '', invalid, now });
}
