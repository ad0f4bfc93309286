/**
 * Admin authentication for mutating routes (register, unregister, scale):
 * `Authorization: Bearer <token>`, compared in constant time. 401 otherwise.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { UnauthorizedError } from './errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

export function requireAdmin(token: string): RequestHandler {
  if (!token) throw new Error('the admin token must not be empty');
  const expected = digest(token);
  return (req, _res, next) => {
    const header = req.headers.authorization;
    if (!header) return next(new UnauthorizedError('missing admin token'));
    const m = /^Bearer\s+(.+)$/i.exec(header);
    if (!m || !timingSafeEqual(digest(m[1]!.trim()), expected)) return next(new UnauthorizedError('wrong admin token'));
    next();
  };
}
