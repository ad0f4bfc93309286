/** The deadline of a gateway request: header `x-cornserve-deadline` (epoch ms), or `?timeout_ms=`, or 5 minutes (lib/deadline's rule). */
import type { IncomingMessage } from 'node:http';
import { DEADLINE_HEADER, deadlineAfter, parseDeadline } from '../../lib/deadline.js';
import { BadRequestError } from './errors.js';

const invalid = (message: string) => new BadRequestError(message);

/** `query`: express's parsed query string (a request the hot path takes has none). */
export function requestDeadline(req: Pick<IncomingMessage, 'headers'> & { query?: Record<string, unknown> }, now = Date.now()): number {
  const header = req.headers[DEADLINE_HEADER];
  if (header !== undefined) return parseDeadline(header, { where: `the ${DEADLINE_HEADER} header`, invalid, now });
  const timeout = req.query?.timeout_ms;
  if (timeout !== undefined) return deadlineAfter(timeout, { where: 'timeout_ms', invalid, now });
  return parseDeadline(undefined, { where: '', invalid, now });
}
