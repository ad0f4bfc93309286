/**
 * Forwarding a request to an upstream (an app function's /invoke, the dispatcher's /graph) over a
 * keep-alive agent, piping the reply (JSON or an NDJSON stream) back as it arrives.
 *
 *  - the caller's trace context and deadline travel as `traceparent` and `x-cornserve-deadline`;
 *  - the client going away aborts the upstream request;
 *  - past the deadline (+ a short grace for the upstream's own 504) the gateway answers 504 itself;
 *  - an upstream failure before the reply started is handed to `onFailure` (which picks the error);
 *    after a stream started, the stream ends with a final `{"error": {...}}` line.
 */
import { Agent, type ClientRequest, type IncomingMessage } from 'node:http';
import type { Response } from 'express';
import { DEADLINE_HEADER } from '../../functions/sdk/index.js';
import { toErrorBody } from '../../lib/http.js';
import { traceHeaders } from '../../lib/telemetry.js';
import { deadlineTimer } from '../../lib/wait.js';
import { httpRequest } from '../../lib/unix-url.js';
import { GatewayDeadlineError } from './errors.js';

export interface UpstreamOptions {
  /** http:// or http+unix:// (lib/unix-url.ts). */
  url: string;
  body: string | Buffer;
  deadline: number;
  agent: Agent;
  /** Extra request headers (e.g. CloudEvent attributes). */
  headers?: Record<string, string>;
  /** The caller's traceparent, passed on when no telemetry is running (no active span to inject). */
  traceparent?: string;
  /** Names the upstream in the deadline error. */
  what: string;
}

export interface ForwardOptions extends UpstreamOptions {
  /** Maps an upstream connection failure (before any reply) to the error the client gets. */
  onFailure: (err: Error) => Promise<unknown> | unknown;
  /** Told the error code of an upstream error reply (for metrics). */
  onErrorCode?: (code: string) => void;
}

/** Grace past the deadline for the upstream's own, more precise, deadline error. */
const DEADLINE_GRACE_MS = 1_000;

const PASSED_HEADERS = ['content-type', 'cache-control', 'retry-after'];

export const keepAliveAgent = () => new Agent({ keepAlive: true, maxSockets: Infinity, timeout: 60_000 });

/** The POST to the upstream (not yet ended), with the JSON body's headers, the deadline and the trace context. */
function postUpstream(opts: UpstreamOptions): ClientRequest {
  return httpRequest(opts.url, {
    method: 'POST',
    agent: opts.agent,
    headers: {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(opts.body)),
      [DEADLINE_HEADER]: String(opts.deadline),
      ...(opts.traceparent ? { traceparent: opts.traceparent } : {}),
      ...traceHeaders(),
      ...opts.headers,
    },
  });
}

/**
 * POSTs to the upstream and resolves with its response (any status) for the caller to read; rejects on a
 * connection failure. Past the deadline (+ the grace) or once `signal` aborts, the request — and a reply
 * still being read — is destroyed (GatewayDeadlineError / "the client disconnected").
 */
export function openUpstream(opts: UpstreamOptions & { signal: AbortSignal }): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = postUpstream(opts);
    const timer = deadlineTimer(opts.deadline + DEADLINE_GRACE_MS, () => req.destroy(new GatewayDeadlineError(opts.what)));
    const cancel = () => req.destroy(new Error('the client disconnected'));
    opts.signal.addEventListener('abort', cancel, { once: true });
    req.on('error', (e) => {
      timer.clear();
      reject(e);
    });
    req.on('response', (res) => {
      res.on('close', () => {
        timer.clear();
        opts.signal.removeEventListener('abort', cancel);
      });
      // The deadline and a disconnect keep applying while the body streams.
      req.on('error', (e) => res.destroy(e));
      resolve(res);
    });
    req.end(opts.body);
  });
}

/** Resolves with the status sent to the client once the reply is complete (or the client left). */
export function forward(res: Response, opts: ForwardOptions): Promise<number> {
  return new Promise((resolve) => {
    let settled = false;
    let upstreamRes: IncomingMessage | undefined;
    const finish = () => {
      if (settled) return;
      settled = true;
      timer.clear();
      resolve(res.statusCode);
    };
    const fail = (err: unknown) => {
      if (settled) return;
      if (!res.headersSent) {
        const { status, body } = toErrorBody(err);
        res.status(status).json(body);
      } else if (!res.writableEnded) {
        // A stream ends with an error line; a half-sent JSON body cannot be repaired, so the connection is cut.
        if (!String(res.getHeader('content-type') ?? '').includes('ndjson')) res.destroy();
        else res.end(`${JSON.stringify(toErrorBody(err).body)}\n`);
      }
      finish();
    };

    const req = postUpstream(opts);
    const timer = deadlineTimer(opts.deadline + DEADLINE_GRACE_MS, () => {
      req.destroy();
      upstreamRes?.destroy();
      fail(new GatewayDeadlineError(opts.what));
    });

    res.on('close', () => {
      if (!res.writableFinished) req.destroy();
      finish();
    });
    req.on('error', (err) => {
      if (settled) return;
      if (upstreamRes) return fail(err);
      Promise.resolve(opts.onFailure(err)).then(fail, fail);
    });
    req.on('response', (up) => {
      upstreamRes = up;
      res.status(up.statusCode ?? 502);
      for (const h of PASSED_HEADERS) if (up.headers[h] !== undefined) res.setHeader(h, up.headers[h]!);
      if (up.headers['content-length'] !== undefined) res.setHeader('content-length', up.headers['content-length']);
      const streaming = String(up.headers['content-type'] ?? '').includes('ndjson');
      if (streaming) res.flushHeaders();
      const errorBody: Buffer[] | undefined = (up.statusCode ?? 500) >= 400 && opts.onErrorCode ? [] : undefined;
      up.on('data', (chunk: Buffer) => {
        if (errorBody && errorBody.length < 64) errorBody.push(chunk);
        if (!res.write(chunk)) {
          up.pause();
          res.once('drain', () => up.resume());
        }
      });
      up.on('end', () => {
        if (errorBody) opts.onErrorCode!(errorCodeOf(Buffer.concat(errorBody)));
        res.end();
        finish();
      });
      up.on('error', (err) => fail(err));
      up.on('aborted', () => fail(new Error('the upstream connection closed mid-reply')));
    });
    req.end(opts.body);
  });
}

function errorCodeOf(body: Buffer): string {
  try {
    const code = (JSON.parse(body.toString('utf8')) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : 'UNKNOWN';
  } catch {
    return 'UNKNOWN';
  }
}
