/**
 * The app-function HTTP server (plain node:http: two routes, on the hot path of every invocation).
 *
 *   POST /invoke  {request_data}   headers: traceparent, x-cornserve-deadline (epoch ms)
 *     -> 422 when request_data does not match the app's request schema (details = the zod issues)
 *     -> serve() inside runInRequestScope({deadline, signal, traceparent, dispatcher, allowedTaskKeys, appId})
 *     -> 200 JSON (checked against the response schema), or `application/x-ndjson`, one chunk per line,
 *        when serve() returns an async iterable. An error after streaming started ends the stream with a
 *        final `{"error": {...}}` line; an error before the first chunk is an ordinary error reply.
 *   GET /health -> 200 {status: 'ok', app}
 *
 * The signal given to serve() aborts when the client disconnects or the deadline passes; every wait on
 * serve() is bounded by the deadline, so a hanging app still gets a 504.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  DEADLINE_HEADER,
  ValidationError,
  formatIssues,
  isCornserveError,
  runInRequestScope,
  unitTaskKey,
  type App,
  type GraphDispatcher,
} from '../sdk/index.js';
import { errorHeaders, readWhole, toErrorBody } from '../../lib/http.js';
import type { Logger } from '../../lib/log.js';
import { SpanKind, SpanStatusCode, context, currentTraceparent, propagation, trace, tracer, tracingOn } from '../../lib/telemetry.js';
import { deadlineTimer } from '../../lib/wait.js';
import { parseDeadline } from '../../lib/deadline.js';
import { AppServeError, BadInvokeBodyError, DeadlineExceededError, ResponseSchemaError } from './errors.js';
import { bodyLimitBytes, hopBodyLimitBytes } from '../../lib/body-limit.js';

export interface FunctionServerOptions {
  app: App;
  appId: string;
  dispatcher: GraphDispatcher;
  log: Logger;
  /** Largest accepted invoke body. @default 32 MiB */
  bodyLimitBytes?: number;
}

type Reply =
  | { kind: 'json'; value: unknown }
  /** `next()` resumes the app's iterator inside the request scope (async generators run in their caller's context). */
  | { kind: 'stream'; first: IteratorResult<unknown>; next: () => Promise<IteratorResult<unknown>>; stop: () => void };

const isAsyncIterable = (v: unknown): v is AsyncIterable<unknown> =>
  typeof v === 'object' && v !== null && typeof (v as Record<symbol, unknown>)[Symbol.asyncIterator] === 'function';

/**
 * One request's cancellation: the AbortSignal serve() and its dispatches see, and `race(p)`, which resolves like
 * `p` or rejects with the abort reason once aborted (the pending waits are kept in a set, not as abort listeners;
 * a settled wait leaves nothing behind, so a long stream does not hold on to its chunks).
 */
class Cancellation {
  readonly #controller = new AbortController();
  readonly #waiting = new Set<(reason: unknown) => void>();

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  abort(reason: Error): void {
    this.#controller.abort(reason);
    for (const reject of this.#waiting) reject(this.#controller.signal.reason);
    this.#waiting.clear();
  }

  race<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.signal.aborted) reject(this.signal.reason);
      else this.#waiting.add(reject);
      p.then(
        (v) => { this.#waiting.delete(reject); resolve(v); },
        (e) => { this.#waiting.delete(reject); reject(e); },
      );
    });
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return readWhole(req, limit, () => new BadInvokeBodyError(`request body is larger than ${limit} bytes`, 413, 'PAYLOAD_TOO_LARGE'));
}

function parseInvokeBody(raw: Buffer): unknown {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    throw new BadInvokeBodyError(`request body is not valid JSON: ${(e as Error).message}`, 400, 'BAD_JSON');
  }
  if (typeof body !== 'object' || body === null || !('request_data' in body))
    throw new ValidationError('invoke body', [{ path: 'request_data', message: 'required: send {"request_data": {...}}' }]);
  return (body as { request_data: unknown }).request_data;
}

function sendError(res: ServerResponse, err: unknown): void {
  const { status, body } = toErrorBody(err);
  if (res.headersSent) return void res.end();
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...errorHeaders(err) });
  res.end(text);
}

export function buildFunctionServer(options: FunctionServerOptions): Server {
  const { app, appId, dispatcher, log } = options;
  const bodyLimit = hopBodyLimitBytes(options.bodyLimitBytes ?? bodyLimitBytes()); // the gateway's limit is the smallest (lib/body-limit.ts)
  const allowedTaskKeys = new Set(app.unitTasks().map(unitTaskKey));

  const checkChunk = (chunk: unknown, what: string) => {
    const r = app.response.safeParse(chunk);
    if (!r.success) throw new ResponseSchemaError(app.name, formatIssues(r.error.issues), what);
    return r.data;
  };

  /** Runs serve() and waits for its value, or for its first chunk when it streams. */
  async function runServe(request: unknown, cancel: Cancellation, deadline: number, traceparent: string | undefined): Promise<Reply> {
    const scope = { deadline, signal: cancel.signal, dispatcher, allowedTaskKeys, appId, ...(traceparent ? { traceparent } : {}) };
    const result = await cancel.race(runInRequestScope(scope, async () => app.serve(request)));
    if (!isAsyncIterable(result)) return { kind: 'json', value: checkChunk(result, 'response') };
    const it = result[Symbol.asyncIterator]();
    const next = () => runInRequestScope(scope, () => it.next());
    const first = await cancel.race(next());
    return { kind: 'stream', first, next, stop: () => void it.return?.().catch(() => {}) };
  }

  async function streamReply(res: ServerResponse, reply: Extract<Reply, { kind: 'stream' }>, cancel: Cancellation): Promise<void> {
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-cache' });
    let next = reply.first;
    try {
      while (!next.done) {
        res.write(`${JSON.stringify(checkChunk(next.value, 'stream chunk'))}\n`);
        next = await cancel.race(reply.next());
      }
    } catch (e) {
      const err = normalizeError(e, cancel.signal);
      log.warn({ err, appId }, 'stream failed after it started');
      res.write(`${JSON.stringify(toErrorBody(err).body)}\n`);
      reply.stop();
    }
    res.end();
  }

  function normalizeError(e: unknown, signal: AbortSignal): unknown {
    if (signal.aborted && (signal.reason as Error | undefined)?.name === 'TimeoutError') return new DeadlineExceededError(`serve() of app ${app.name}`);
    if (isCornserveError(e)) return e;
    return new AppServeError(app.name, e);
  }

  async function invoke(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const deadline = parseDeadline(req.headers[DEADLINE_HEADER], { where: `the ${DEADLINE_HEADER} header`, invalid: (m) => new BadInvokeBodyError(m) });
    const requestData = parseInvokeBody(await readBody(req, bodyLimit));
    const parsed = app.request.safeParse(requestData);
    if (!parsed.success) throw new ValidationError('request_data', formatIssues(parsed.error.issues));

    const cancel = new Cancellation();
    const timer = deadlineTimer(deadline, () => cancel.abort(new DOMException('deadline passed', 'TimeoutError')));
    res.on('close', () => {
      if (!res.writableFinished) cancel.abort(new DOMException('the client disconnected', 'AbortError'));
    });
    try {
      const incoming = typeof req.headers.traceparent === 'string' ? req.headers.traceparent : undefined;
      const reply = await runServe(parsed.data, cancel, deadline, currentTraceparent() ?? incoming);
      if (reply.kind === 'stream') return await streamReply(res, reply, cancel);
      const text = JSON.stringify(reply.value);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    } catch (e) {
      throw normalizeError(e, cancel.signal);
    } finally {
      timer.clear();
    }
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ status: 'ok', app: app.name, app_id: appId }));
    }
    if (req.method !== 'POST' || path !== '/invoke') {
      return sendError(res, new BadInvokeBodyError(`no route ${req.method} ${path}`, 404, 'NOT_FOUND'));
    }
    const fail = (e: unknown) => {
      if (toErrorBody(e).status >= 500) log.error({ err: e, appId }, 'invoke failed');
      sendError(res, e);
    };
    if (!tracingOn()) return void invoke(req, res).catch(fail);
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer().startSpan('function POST /invoke', { kind: SpanKind.SERVER, attributes: { 'cornserve.app_id': appId } }, parent);
    res.on('close', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(trace.setSpan(parent, span), () => invoke(req, res).catch(fail));
  }

  const server = createServer(handle);
  server.keepAliveTimeout = 65_000;
  return server;
}
