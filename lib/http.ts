/**
 * HTTP conventions shared by every server: errors are `{error: {code, message, details?}}` with a
 * meaningful status; zod failures are 422 naming each field; oversized bodies 413; bad JSON 400.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import { z } from 'zod';
import { CornserveError, ValidationError, formatIssues, isCornserveError } from '../functions/sdk/errors.js';
import type { Logger } from './log.js';

export class HttpError extends CornserveError {}

export const notFound = (what: string) => new HttpError('NOT_FOUND', `${what} not found`, 404);

/** Parses `value` with `schema` or throws a 422 ValidationError naming every bad field. */
export function parseOr422<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const r = schema.safeParse(value);
  if (!r.success) throw new ValidationError(what, formatIssues(r.error.issues));
  return r.data;
}

/** Maps any thrown value to a status + error body. */
export function toErrorBody(err: unknown): { status: number; body: { error: { code: string; message: string; details?: unknown } } } {
  if (isCornserveError(err)) return { status: err.status, body: { error: err.toJSON() } };
  const e = err as { type?: string; status?: number; message?: string; name?: string };
  if (e?.type === 'entity.too.large') return { status: 413, body: { error: { code: 'PAYLOAD_TOO_LARGE', message: e.message ?? 'request body too large' } } };
  if (e?.type === 'entity.parse.failed') return { status: 400, body: { error: { code: 'BAD_JSON', message: `request body is not valid JSON: ${e.message}` } } };
  if (e?.name === 'TimeoutError') return { status: 504, body: { error: { code: 'DEADLINE_EXCEEDED', message: e.message ?? 'deadline exceeded' } } };
  const status = typeof e?.status === 'number' && e.status >= 400 && e.status < 600 ? e.status : 500;
  return { status, body: { error: { code: status === 500 ? 'INTERNAL' : 'HTTP_ERROR', message: e?.message ?? String(err) } } };
}

/**
 * Headers an error reply carries besides its body: `Retry-After` (seconds) when the error says how long to wait
 * (`details.retryAfterS`, e.g. NO_EXECUTOR). The details travel in the body too, so a hop that rebuilds the error
 * from the body (the app-function runtime) sets the same header again.
 */
export function errorHeaders(err: unknown): Record<string, string> {
  const s = isCornserveError(err) ? (err.details as { retryAfterS?: unknown } | undefined)?.retryAfterS : undefined;
  return typeof s === 'number' && Number.isFinite(s) && s > 0 ? { 'retry-after': String(Math.ceil(s)) } : {};
}

/** A JSON reply written with node:http's own calls: what express's res.json sends, for handlers outside express too. */
export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * Logs an error reply once: 503 and 504 are answers given on purpose (no executor yet, draining, a deadline passed):
 * a warning with the code and no stack; any other 5xx is a fault: an error with its stack. 4xx are the client's business.
 */
export function logErrorReply(log: Logger, path: string, status: number, code: string | undefined, message: string, err: unknown): void {
  if (status === 503 || status === 504) log.warn({ path, status, code }, message);
  else if (status >= 500) log.error({ err, path }, message);
}

/** The error reply of `err` (a reply already started is just ended), logged by logErrorReply. */
export function sendError(log: Logger, req: IncomingMessage, res: ServerResponse, err: unknown): void {
  const { status, body } = toErrorBody(err);
  logErrorReply(log, (req.url ?? '').split('?')[0]!, status, body.error.code, body.error.message, err);
  if (res.headersSent) {
    res.end();
    return;
  }
  sendJson(res, status, body, errorHeaders(err));
}

/** The last middleware of every express app: sendError. */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => sendError(log, req, res, err);
}

/** Wraps an async handler (express 5 forwards rejections itself; this keeps handler types tidy). */
export const route =
  (fn: (req: Request, res: import('express').Response) => Promise<unknown> | unknown): RequestHandler =>
  async (req, res, next) => {
    try {
      await fn(req, res);
    } catch (e) {
      next(e);
    }
  };

export { ValidationError };

const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** '32mb', '100kb', '512' (bytes) -> bytes. */
export function parseByteSize(size: string | number): number {
  if (typeof size === 'number') return size;
  const m = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$/i.exec(size);
  if (!m) throw new Error(`not a size: ${size}`);
  return Math.floor(Number(m[1]) * UNITS[(m[2] ?? 'b').toLowerCase()]!);
}

/** An error shaped like body-parser's, so toErrorBody maps it to 413. */
const tooLarge = (limit: number) => Object.assign(new Error(`request body is larger than ${limit} bytes`), { type: 'entity.too.large', status: 413 });

/**
 * The whole body of `req` with plain events (cheaper than `for await` on small bodies); past `max` bytes it
 * rejects with `tooLargeError()` (default: body-parser's 413 shape) and drains the rest.
 */
export function readWhole(req: IncomingMessage, max: number, tooLargeError: () => Error = () => tooLarge(max)): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers['content-length'] ?? 0) > max) return reject(tooLargeError());
    const parts: Buffer[] = [];
    let size = 0;
    const onData = (d: Buffer) => {
      size += d.length;
      if (size > max) {
        req.off('data', onData);
        req.resume();
        return reject(tooLargeError());
      }
      parts.push(d);
    };
    req.on('data', onData);
    req.once('end', () => resolve(parts.length === 1 ? parts[0]! : Buffer.concat(parts)));
    req.once('error', reject);
  });
}

/**
 * Lean body middleware for hot routes: the whole body in `req.body` (any content type) as a Buffer; 413 past
 * `limit`. What express.raw({type: () => true}) does, without its per-request type machinery. `next` runs in a
 * promise reaction, so it keeps the caller's async context (trace spans), as body-parser does.
 */
export function wholeBody(limit: string | number): RequestHandler {
  const max = parseByteSize(limit);
  return (req, _res, next) => {
    readWhole(req, max).then((body) => {
      req.body = body;
      next();
    }, next);
  };
}
