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
 *
 * The same invocations also come over the function link (`GET /link` upgraded: lib/function-link.ts,
 * link-server.ts), the gateway's hop under `cornserve up`: invoke() is written against InvokeReply, which a
 * node:http response and a link request both implement.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import {
  DEADLINE_HEADER,
  ValidationError,
  formatIssues,
  isCornserveError,
  runInRequestScope,
  unitTaskKey,
  type App,
  type GraphDispatcher,
  type RequestScope,
} from '../sdk/index.js';
import { errorHeaders, logErrorReply, readWhole, toErrorBody } from '../../lib/http.js';
import type { Logger } from '../../lib/log.js';
import { SpanKind, SpanStatusCode, context, currentTraceparent, propagation, trace, tracer, tracingOn } from '../../lib/telemetry.js';
import { deadlineTimer } from '../../lib/wait.js';
import { parseDeadline } from '../../lib/deadline.js';
import { AppServeError, BadInvokeBodyError, DeadlineExceededError, ResponseSchemaError } from './errors.js';
import { bodyLimitBytes, hopBodyLimitBytes } from '../../lib/body-limit.js';
import { acceptLinks } from './link-server.js';
import { Cut } from '../../lib/cut-signal.js';

export interface FunctionServerOptions {
  app: App;
  appId: string;
  dispatcher: GraphDispatcher;
  log: Logger;
  /** Largest accepted invoke body. @default 32 MiB */
  bodyLimitBytes?: number;
  /** In-process dispatch's metrics: GET /metrics (Prometheus text; `?format=json`: prom-client's JSON, which the gateway sums). */
  metrics?: Registry;
}

type Reply =
  | { kind: 'json'; value: unknown }
  /** `next()` resumes the app's iterator inside the request scope (async generators run in their caller's context). */
  | { kind: 'stream'; first: IteratorResult<unknown>; next: () => Promise<IteratorResult<unknown>>; stop: () => void };

const isAsyncIterable = (v: unknown): v is AsyncIterable<unknown> =>
  typeof v === 'object' && v !== null && typeof (v as Record<symbol, unknown>)[Symbol.asyncIterator] === 'function';

/**
 * One request's cancellation: a Cut (lib/cut-signal.ts) that the in-process dispatch listens to, the AbortSignal
 * serve() sees (made from it only when read), and `race(p)`, which resolves like `p` or rejects with the abort reason
 * once aborted (the pending waits are kept in a set, not as abort listeners; a settled wait leaves nothing behind,
 * so a long stream does not hold on to its chunks).
 */
class Cancellation {
  readonly cut = new Cut();
  readonly #waiting = new Set<(reason: unknown) => void>();

  abort(reason: Error): void {
    this.cut.abort(reason);
    for (const reject of this.#waiting) reject(this.cut.reason);
    this.#waiting.clear();
  }

  race<T>(p: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.cut.aborted) reject(this.cut.reason);
      else this.#waiting.add(reject);
      p.then(
        (v) => { this.#waiting.delete(reject); resolve(v); },
        (e) => { this.#waiting.delete(reject); reject(e); },
      );
    });
  }
}

/**
 * Where one invocation's reply goes: a node:http response, or one request's frames on the function link
 * (link-server.ts). invoke() below is written against this only, so both hops run the same code.
 */
export interface InvokeReply {
  /** True once the status went out: an error can then only end the reply (a stream's error line) or cut it. */
  readonly started: boolean;
  /** The status sent (for the span). */
  readonly status: number;
  /** A whole reply. */
  send(status: number, headers: Record<string, string>, body: string): void;
  /** Starts a 200 reply whose body follows in write()s. */
  startStream(headers: Record<string, string>): void;
  /** More body; false: wait for drained() before writing more (the caller reads slower than serve() yields). */
  write(chunk: string): boolean;
  drained(): Promise<void>;
  end(): void;
  /** Ends a started reply that cannot be completed: the caller sees it cut, not complete. */
  cut(): void;
  /** `listener` runs once if the caller goes away (disconnect, cancel) before the reply is complete. */
  onAbandoned(listener: () => void): void;
  /** `listener` runs once the reply is over, whichever way. */
  onClose(listener: () => void): void;
}

/** One invocation as either hop delivers it. */
export interface InvokeRequest {
  /** The deadline as sent (header text, or the link's number); parseDeadline checks it. */
  deadline: unknown;
  /** Trace context carrier: the request headers, or the link's `trace` fields. */
  carrier: Record<string, string | string[] | undefined>;
  /** The invoke body, refused with `tooLarge` past `limit` bytes. */
  body(limit: number, tooLarge: () => Error): Promise<Buffer>;
}

/** Handles one invocation: the same for the HTTP route and the link. */
export type Invoker = (request: InvokeRequest, reply: InvokeReply) => void;

/** InvokeReply over a node:http response. */
class HttpReply implements InvokeReply {
  constructor(private readonly res: ServerResponse) {}
  get started(): boolean { return this.res.headersSent; }
  get status(): number { return this.res.statusCode; }
  send(status: number, headers: Record<string, string>, body: string): void {
    this.res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
    this.res.end(body);
  }
  startStream(headers: Record<string, string>): void { this.res.writeHead(200, headers); }
  write(chunk: string): boolean { return this.res.write(chunk); }
  drained(): Promise<void> { return new Promise((resolve) => this.res.once('drain', resolve)); }
  end(): void { this.res.end(); }
  cut(): void { this.res.destroy(); }
  onAbandoned(listener: () => void): void {
    this.res.on('close', () => { if (!this.res.writableFinished) listener(); });
  }
  onClose(listener: () => void): void { this.res.on('close', listener); }
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

function sendError(reply: InvokeReply, err: unknown): void {
  if (reply.started) return reply.cut();
  const { status, body } = toErrorBody(err);
  reply.send(status, { 'content-type': 'application/json', ...errorHeaders(err) }, JSON.stringify(body));
}

function sendHttpError(res: ServerResponse, err: unknown): void {
  sendError(new HttpReply(res), err);
}

/** The app function's server; drainLinks() ends its function links once their requests finished (shutdown). */
export type FunctionServer = Server & { drainLinks(): void };

export function buildFunctionServer(options: FunctionServerOptions): FunctionServer {
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
    const cut = cancel.cut;
    const scope: RequestScope = {
      deadline,
      get signal() { return cut.abortSignal; },
      cancel: cut,
      dispatcher,
      allowedTaskKeys,
      appId,
      ...(traceparent ? { traceparent } : {}),
    };
    const result = await cancel.race(runInRequestScope(scope, async () => app.serve(request)));
    if (!isAsyncIterable(result)) return { kind: 'json', value: checkChunk(result, 'response') };
    const it = result[Symbol.asyncIterator]();
    const next = () => runInRequestScope(scope, () => it.next());
    const first = await cancel.race(next());
    return { kind: 'stream', first, next, stop: () => void it.return?.().catch(() => {}) };
  }

  async function streamReply(out: InvokeReply, reply: Extract<Reply, { kind: 'stream' }>, cancel: Cancellation): Promise<void> {
    out.startStream({ 'content-type': 'application/x-ndjson', 'cache-control': 'no-cache' });
    let next = reply.first;
    try {
      while (!next.done) {
        // A caller reading slower than serve() yields holds serve() back instead of piling lines up here.
        if (!out.write(`${JSON.stringify(checkChunk(next.value, 'stream chunk'))}\n`)) await cancel.race(out.drained());
        next = await cancel.race(reply.next());
      }
    } catch (e) {
      const err = normalizeError(e, cancel.cut);
      log.warn({ err, appId }, 'stream failed after it started');
      out.write(`${JSON.stringify(toErrorBody(err).body)}\n`);
      reply.stop();
    }
    out.end();
  }

  function normalizeError(e: unknown, cut: Cut): unknown {
    if (cut.aborted && (cut.reason as Error | undefined)?.name === 'TimeoutError') return new DeadlineExceededError(`serve() of app ${app.name}`);
    if (isCornserveError(e)) return e;
    return new AppServeError(app.name, e);
  }

  const tooLarge = () => new BadInvokeBodyError(`request body is larger than ${bodyLimit} bytes`, 413, 'PAYLOAD_TOO_LARGE');

  async function invoke(request: InvokeRequest, out: InvokeReply): Promise<void> {
    const deadline = parseDeadline(request.deadline, { where: `the ${DEADLINE_HEADER} header`, invalid: (m) => new BadInvokeBodyError(m) });
    const requestData = parseInvokeBody(await request.body(bodyLimit, tooLarge));
    const parsed = app.request.safeParse(requestData);
    if (!parsed.success) throw new ValidationError('request_data', formatIssues(parsed.error.issues));

    const cancel = new Cancellation();
    const timer = deadlineTimer(deadline, () => cancel.abort(new DOMException('deadline passed', 'TimeoutError')));
    out.onAbandoned(() => cancel.abort(new DOMException('the client disconnected', 'AbortError')));
    try {
      const incoming = typeof request.carrier.traceparent === 'string' ? request.carrier.traceparent : undefined;
      const reply = await runServe(parsed.data, cancel, deadline, currentTraceparent() ?? incoming);
      if (reply.kind === 'stream') return await streamReply(out, reply, cancel);
      out.send(200, { 'content-type': 'application/json' }, JSON.stringify(reply.value));
    } catch (e) {
      throw normalizeError(e, cancel.cut);
    } finally {
      timer.clear();
    }
  }

  /** An invocation's error: logged when it is ours (5xx; an expected 503/504 as a warning), and sent as the reply (or cutting a started one). */
  const fail = (out: InvokeReply, e: unknown) => {
    const { status, body } = toErrorBody(e);
    logErrorReply(log, `/invoke (${appId})`, status, body.error.code, `invoke failed: ${body.error.message}`, e);
    sendError(out, e);
  };

  /** One invocation, from either hop: its span (when tracing), invoke(), and the error reply. */
  const serveInvoke: Invoker = (request, out) => {
    if (!tracingOn()) return void invoke(request, out).catch((e: unknown) => fail(out, e));
    const parent = propagation.extract(context.active(), request.carrier);
    const span = tracer().startSpan('function POST /invoke', { kind: SpanKind.SERVER, attributes: { 'cornserve.app_id': appId } }, parent);
    out.onClose(() => {
      span.setAttribute('http.response.status_code', out.status);
      if (out.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(trace.setSpan(parent, span), () => invoke(request, out).catch((e: unknown) => fail(out, e)));
  };

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ status: 'ok', app: app.name, app_id: appId }));
    }
    if (req.method === 'GET' && path === '/metrics' && options.metrics) return void serveMetrics(options.metrics, req, res);
    if (req.method !== 'POST' || path !== '/invoke') {
      return sendHttpError(res, new BadInvokeBodyError(`no route ${req.method} ${path}`, 404, 'NOT_FOUND'));
    }
    serveInvoke({ deadline: req.headers[DEADLINE_HEADER], carrier: req.headers, body: (limit, big) => readWhole(req, limit, big) }, new HttpReply(res));
  }

  const server = createServer(handle);
  server.keepAliveTimeout = 65_000;
  const links = acceptLinks(server, serveInvoke, log);
  return Object.assign(server, { drainLinks: () => links.drain() });
}

/** The registry as Prometheus text, or as prom-client's JSON (`?format=json`: what AggregatorRegistry.aggregate takes). */
async function serveMetrics(registry: Registry, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const json = new URL(req.url ?? '/', 'http://function').searchParams.get('format') === 'json';
  const body = json ? JSON.stringify(await registry.getMetricsAsJSON()) : await registry.metrics();
  res.writeHead(200, { 'content-type': json ? 'application/json' : registry.contentType });
  res.end(body);
}
