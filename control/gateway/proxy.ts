/**
 * Forwarding a request to an upstream (an app function's /invoke, the dispatcher's /graph) over a
 * keep-alive agent, piping the reply (JSON or an NDJSON stream) back as it arrives.
 *
 *  - the caller's trace context and deadline travel as `traceparent` and `x-cornserve-deadline`;
 *  - the client going away aborts the upstream request;
 *  - past the deadline (+ a short grace for the upstream's own 504) the gateway answers 504 itself;
 *  - an upstream failure before the reply started is handed to `onFailure` (which picks the error);
 *    after a stream started, the stream ends with a final `{"error": {...}}` line;
 *  - error replies and a stream's final error line pass through redactInternal (lib/redact.ts): no internal
 *    address (socket path, loopback port) leaves the platform, whatever the upstream wrote; what the client sent
 *    (a URL quoted in the error) is kept as written.
 *
 * With `link` (an app function's framed link under `up`, function-link.ts) the same request goes as frames on
 * that link instead of an HTTP request: a LinkCall behaves like the ClientRequest, so everything above holds on
 * both hops with this one code. The one difference: a reply that came whole on the link (the common JSON reply)
 * is its bytes, not a stream (WholeReply), and forward() writes it to the client at once.
 */
import { Agent, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { DEADLINE_HEADER, isCornserveError } from '../../functions/sdk/index.js';
import { errorHeaders, sendJson, toErrorBody } from '../../lib/http.js';
import { redactInternal, userAddresses } from '../../lib/redact.js';
import { traceHeaders } from '../../lib/telemetry.js';
import { deadlineTimer } from '../../lib/wait.js';
import { httpRequest } from '../../lib/unix-url.js';
import { GatewayDeadlineError } from './errors.js';
import type { FunctionLink } from './function-link.js';
import type { CutSignal } from '../../lib/cut-signal.js';

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
  /** Send it on this function link instead of as an HTTP request (`url` and `headers` then do not apply). */
  link?: FunctionLink;
}

/** The upstream's reply as forward() reads it: an IncomingMessage, or a reply on the function link. */
export interface UpstreamReply extends Readable {
  readonly statusCode?: number | undefined;
  readonly headers: IncomingHttpHeaders;
  /** True once the whole body came (false for a reply cut mid-way). */
  readonly complete: boolean;
}

/**
 * A reply whose whole body is already here (the function link's head frame with `end`): read without a stream, so
 * the common JSON reply costs no Readable, no events and no pipe.
 */
export interface WholeReply {
  readonly statusCode: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/** The upstream request as forward() drives it: a ClientRequest, or a call on the function link. */
interface UpstreamCall {
  end(body: string | Buffer): void;
  destroy(err?: Error): void;
  on(event: 'response', listener: (res: UpstreamReply) => void): this;
  /** The reply came whole (a function link's call; a ClientRequest always answers with 'response'). */
  on(event: 'whole', listener: (res: WholeReply) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
}

export interface ForwardOptions extends UpstreamOptions {
  /** Maps an upstream connection failure (before any reply) to the error the client gets. */
  onFailure: (err: Error) => Promise<unknown> | unknown;
  /** Told the error code of an upstream error reply (for metrics). */
  onErrorCode?: (code: string) => void;
  /** Aborting it cuts the request: the client gets the abort reason (as the error reply, or a stream's last line). */
  signal?: CutSignal;
}

/** Grace past the deadline for the upstream's own, more precise, deadline error. */
const DEADLINE_GRACE_MS = 1_000;

const PASSED_HEADERS = ['content-type', 'cache-control', 'retry-after'];

export const keepAliveAgent = () => new Agent({ keepAlive: true, maxSockets: Infinity, timeout: 60_000 });

/** The POST to the upstream (not yet ended), with the JSON body's headers, the deadline and the trace context. */
function postUpstream(opts: UpstreamOptions): UpstreamCall {
  if (opts.link) return opts.link.call({ deadline: opts.deadline, trace: { ...(opts.traceparent ? { traceparent: opts.traceparent } : {}), ...traceHeaders() } });
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
export function openUpstream(opts: UpstreamOptions & { signal: CutSignal }): Promise<UpstreamReply> {
  return new Promise((resolve, reject) => {
    const req = postUpstream(opts);
    const timer = deadlineTimer(opts.deadline + DEADLINE_GRACE_MS, () => req.destroy(new GatewayDeadlineError(opts.what)));
    // A cut (unregister, shutdown) passes its error on; the client going away is just a disconnect.
    const cancel = () => req.destroy(isCornserveError(opts.signal.reason) ? opts.signal.reason : new Error('the client disconnected'));
    opts.signal.addEventListener('abort', cancel, { once: true });
    if (opts.signal.aborted) cancel();
    req.on('error', (e) => {
      timer.clear();
      reject(e);
    });
    const onReply = (res: UpstreamReply) => {
      res.on('close', () => {
        timer.clear();
        opts.signal.removeEventListener('abort', cancel);
      });
      // The deadline and a disconnect keep applying while the body streams.
      req.on('error', (e) => res.destroy(e));
      resolve(res);
    };
    req.on('response', onReply);
    req.on('whole', (whole) => onReply(streamOf(whole)));
    req.end(opts.body);
  });
}

/** Resolves with the status sent to the client once the reply is complete (or the client left). */
export function forward(res: ServerResponse, opts: ForwardOptions): Promise<number> {
  // What the client sent (its URLs) stays as written in an error that quotes it; read only when an error is relayed.
  let words: string[] | undefined;
  const redact = (text: string) => redactInternal(text, [], (words ??= userAddresses(parsedOrNull(opts.body))));
  return new Promise((resolve) => {
    let settled = false;
    let upstreamRes: UpstreamReply | undefined;
    const finish = () => {
      if (settled) return;
      settled = true;
      timer.clear();
      opts.signal?.removeEventListener('abort', cut);
      resolve(res.statusCode);
    };
    const fail = (err: unknown) => {
      if (settled) return;
      sendFailure(res, err, redact);
      finish();
    };

    const req = postUpstream(opts);
    const timer = deadlineTimer(opts.deadline + DEADLINE_GRACE_MS, () => {
      const err = new GatewayDeadlineError(opts.what);
      req.destroy(err); // its 'error' comes next tick, after fail() settled: it only tells a link's function why
      upstreamRes?.destroy();
      fail(err);
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
    const onReply = (up: UpstreamReply | WholeReply) => {
      const stream = up instanceof Readable ? up : undefined;
      upstreamRes = stream;
      const streaming = passHead(res, up);
      if (res.statusCode >= 400 && !streaming) return relayError(res, up, redact, opts.onErrorCode, finish, fail);
      if (!stream && !streaming) {
        res.end((up as WholeReply).body); // node:http sends the length of a body written whole
        return finish();
      }
      if (up.headers['content-length'] !== undefined) res.setHeader('content-length', up.headers['content-length']);
      if (streaming) res.flushHeaders();
      const body = bodyWriter(res, streaming, stream, redact);
      if (!stream) {
        body.take((up as WholeReply).body); // a stream that came whole: its lines, then its end
        body.end();
        return finish();
      }
      stream.on('data', body.take);
      stream.on('end', () => {
        body.end();
        finish();
      });
      stream.on('error', (err) => fail(err));
      stream.on('aborted', () => fail(new Error('the upstream connection closed mid-reply')));
    };
    req.on('response', onReply);
    req.on('whole', onReply);

    // A cut (unregister, shutdown drain) answers with its reason; the upstream request is dropped.
    const cut = () => {
      fail(opts.signal!.reason);
      req.destroy(opts.signal!.reason instanceof Error ? opts.signal!.reason : undefined);
      upstreamRes?.destroy();
    };
    if (opts.signal?.aborted) return cut();
    opts.signal?.addEventListener('abort', cut, { once: true });
    req.end(opts.body);
  });
}

/** The upstream's status and passed headers onto the client's reply; true when the reply is an NDJSON stream. */
function passHead(res: ServerResponse, up: UpstreamReply | WholeReply): boolean {
  res.statusCode = up.statusCode ?? 502;
  for (const h of PASSED_HEADERS) if (up.headers[h] !== undefined) res.setHeader(h, up.headers[h]!);
  return String(up.headers['content-type'] ?? '').includes('ndjson');
}

/** `err` to the client: as the error reply, or a stream's last line; a half-sent JSON body cannot be repaired, so it is cut. */
function sendFailure(res: ServerResponse, err: unknown, redact: (text: string) => string): void {
  const { status, body } = toErrorBody(err);
  body.error.message = redact(body.error.message);
  if (!res.headersSent) {
    sendJson(res, status, body, errorHeaders(err));
  } else if (!res.writableEnded) {
    if (!String(res.getHeader('content-type') ?? '').includes('ndjson')) res.destroy();
    else res.end(`${JSON.stringify(body)}\n`);
  }
}

/**
 * Writes a reply's body to the client as it comes, pausing `stream` while the client's socket is full. A stream is
 * passed on in whole lines (so an error line added by sendFailure never lands inside one); its `{"error": ...}` line
 * (its last) is redacted. `end` writes what is held back and ends the reply.
 */
function bodyWriter(res: ServerResponse, streaming: boolean, stream: Readable | undefined, redact: (text: string) => string) {
  const pass = (chunk: Buffer | string) => {
    if (!res.write(chunk) && stream) {
      stream.pause();
      res.once('drain', () => stream.resume());
    }
  };
  let held: Buffer | undefined;
  const take = (chunk: Buffer) => {
    if (!streaming) return pass(chunk);
    let buf = held ? Buffer.concat([held, chunk]) : chunk;
    const lines = buf.lastIndexOf(0x0a) + 1;
    held = lines < buf.length ? buf.subarray(lines) : undefined;
    buf = buf.subarray(0, lines);
    while (buf.length > 0) {
      const at = errorLineStart(buf);
      if (at < 0) return pass(buf);
      if (at > 0) pass(buf.subarray(0, at));
      const nl = buf.indexOf(0x0a, at);
      pass(Buffer.from(redact(buf.subarray(at, nl + 1).toString('utf8'))));
      buf = buf.subarray(nl + 1);
    }
  };
  const end = () => res.end(held && errorLineStart(held) === 0 ? redact(held.toString('utf8')) : held);
  return { take, end };
}

/** An error reply (small): read whole, counted by code, redacted, sent; then `done`. */
function relayError(
  res: ServerResponse, up: UpstreamReply | WholeReply, redact: (text: string) => string, onErrorCode: ((code: string) => void) | undefined,
  done: () => void, fail: (err: unknown) => void,
): void {
  const relay = (text: string) => {
    onErrorCode?.(errorCodeOf(text));
    const body = redact(text);
    res.setHeader('content-length', Buffer.byteLength(body));
    res.end(body);
    done();
  };
  if (!(up instanceof Readable)) return relay(up.body.toString('utf8'));
  const parts: Buffer[] = [];
  up.on('data', (chunk: Buffer) => parts.push(chunk));
  up.on('end', () => relay(Buffer.concat(parts).toString('utf8')));
  up.on('error', (err) => fail(err));
  up.on('aborted', () => fail(new Error('the upstream connection closed mid-reply')));
}

/** A whole reply as the stream openUpstream()'s callers read (the OpenAI route parses the body itself). */
function streamOf(whole: WholeReply): UpstreamReply {
  return Object.assign(Readable.from([whole.body], { objectMode: false }), { statusCode: whole.statusCode, headers: whole.headers, complete: true });
}

const ERROR_LINE = Buffer.from('{"error"');

/** Where an NDJSON `{"error"...` line starts in `chunk` (at its start or after a newline), or -1. */
function errorLineStart(chunk: Buffer): number {
  for (let at = chunk.indexOf(ERROR_LINE); at >= 0; at = chunk.indexOf(ERROR_LINE, at + 1)) if (at === 0 || chunk[at - 1] === 0x0a) return at;
  return -1;
}

function parsedOrNull(body: string | Buffer): unknown {
  try {
    return JSON.parse(body.toString());
  } catch {
    return null;
  }
}

function errorCodeOf(body: string): string {
  try {
    const code = (JSON.parse(body) as { error?: { code?: unknown } }).error?.code;
    return typeof code === 'string' ? code : 'UNKNOWN';
  } catch {
    return 'UNKNOWN';
  }
}
