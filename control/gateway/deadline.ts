/** The deadline of a gateway request: header `x-cornserve-deadline` (epoch ms), or `?timeout_ms=`, or 5 minutes. */
import type { Request } from 'express';
import { DEADLINE_HEADER, DEFAULT_DEADLINE_MS } from '../../functions/sdk/index.js';
import { BadRequestError } from './errors.js';

export function requestDeadline(req: Request, now = Date.now()): number {
  const header = req.headers[DEADLINE_HEADER];
  if (typeof header === 'string') {
    const d = Number(header);
    if (!Number.isFinite(d) || d <= 0) throw new BadRequestError(`${DEADLINE_HEADER} must be a deadline in epoch milliseconds, got ${JSON.stringify(header)}`);
    return d;
  }
  const timeout = req.query.timeout_ms;
  if (timeout !== undefined) {
    const ms = Number(timeout);
    if (typeof timeout !== 'string' || !Number.isFinite(ms) || ms <= 0) throw new BadRequestError(`timeout_ms must be a positive number of milliseconds, got ${JSON.stringify(timeout)}`);
    return now + ms;
  }
  return now + DEFAULT_DEADLINE_MS;
}
