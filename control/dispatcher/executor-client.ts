/**
 * One executor call: POST the descriptor's request to the leased executor over a keep-alive connection
 * pool, with the trace context and the graph's deadline in the headers. Failures become TaskFailedErrors
 * naming the invocation and task; an executor's `{error: {code, message, details?}}` reply keeps its code (and
 * its status when the caller can act on it). The executor's id and address go to logs and spans only.
 *
 * The pool is undici's Agent (keep-alive, one pool per executor origin), called through its `dispatch` API with the
 * ReplyHandler below: per call it costs the caller less CPU than a node:http Agent or undici's own `request`
 * (docs/benchmarks/history.md, step 8; undici's *fetch* was the costly one, see "Overhead"). It has no timeouts
 * of its own: the graph's AbortSignal bounds every call.
 * The reply is handed to the descriptor as a web `Response`: a JSON reply with a Content-Length is read whole
 * first (the common, cheap case); anything else (NDJSON, SSE, chunked) streams through as it arrives.
 */
import { Readable } from 'node:stream';
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import { Agent } from '../../lib/undici.js';
import { DEADLINE_HEADER, type CutSignal } from '../../functions/sdk/index.js';
import { socketPathOf } from '../../lib/unix-url.js';
import { userAddresses } from '../../lib/redact.js';
import type { ExecutorRequest } from '../../lib/descriptor.js';
import { TaskFailedError, type FailureSite } from '../../lib/dispatch-errors.js';

/** No header or body timeout (0): a stream may pause for as long as its deadline allows; the signal ends it. */
const AGENT_OPTIONS = { keepAliveTimeout: 30_000, headersTimeout: 0, bodyTimeout: 0 } as const;

/** The keep-alive pools for executors on TCP (one pool per origin inside the Agent). */
const executorAgent = new Agent(AGENT_OPTIONS);

/** Executors addressed by `http+unix:` URLs (lib/unix-url.ts): one Agent per socket path. */
const unixAgents = new Map<string, Agent>();

function dispatcherFor(url: URL): { dispatcher: Agent; origin: string } {
  const socketPath = socketPathOf(url);
  if (socketPath === undefined) return { dispatcher: executorAgent, origin: url.origin };
  let agent = unixAgents.get(socketPath);
  if (!agent) unixAgents.set(socketPath, (agent = new Agent({ ...AGENT_OPTIONS, connect: { socketPath } })));
  return { dispatcher: agent, origin: 'http://localhost' };
}

/** Largest error body kept in an error's details. */
const MAX_ERROR_BODY = 8 * 1024;

export interface ExecutorCall {
  site: FailureSite;
  request: ExecutorRequest;
  deadline: number;
  /** Extra headers (traceparent). */
  headers: Record<string, string>;
  /** The graph's abort (a Cut, or any AbortSignal). */
  signal: CutSignal;
}

/** A short description of a request failure: "connect ECONNREFUSED 127.0.0.1:1234", "socket hang up", ... */
export function describeFailure(e: unknown): string {
  const err = e as { message?: string; cause?: { message?: string; code?: string } };
  const cause = err?.cause?.message ?? err?.cause?.code;
  return cause ? `${err.message ?? 'error'} (${cause})` : (err?.message ?? String(e));
}

/**
 * A failure to open the connection (nothing was sent): refused (no process listens on the port or socket any more), a
 * unix socket that is gone, or a connect timeout. A failure on an open connection may have delivered the request.
 */
function refusedToConnect(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === 'ECONNREFUSED' || code === 'ENOENT' || code === 'UND_ERR_CONNECT_TIMEOUT';
}

/** An executor's status line and headers. */
interface ReplyHead {
  statusCode: number;
  statusText: string;
  headers: IncomingHttpHeaders;
}

/**
 * An executor's reply: its body read whole (`readWhole`), or as it arrives (back-pressure pauses the connection;
 * destroying the stream aborts the request).
 */
type Reply = ReplyHead & ({ whole: Buffer; stream?: undefined } | { stream: Readable; whole?: undefined });

function webHeaders(res: ReplyHead): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  return headers;
}

/**
 * A 2xx JSON reply already read whole, as the `Response` descriptors expect. json()/text()/arrayBuffer() read
 * the buffer directly; headers and everything else are built on first use (a real undici Response costs a
 * web ReadableStream and a Headers object per call, which most descriptors never touch).
 */
class BufferedResponse implements Response {
  #real: Response | undefined;
  #used = false;
  readonly type = 'basic' as const;
  readonly redirected = false;
  readonly url = '';
  constructor(
    private readonly res: ReplyHead,
    private readonly buffer: Buffer,
  ) {}
  get status(): number {
    return this.res.statusCode;
  }
  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }
  get statusText(): string {
    return this.res.statusText;
  }
  private real(): Response {
    return (this.#real ??= new Response(this.buffer, { status: this.status, statusText: this.statusText, headers: webHeaders(this.res) }));
  }
  get headers(): Headers {
    return this.real().headers;
  }
  get body(): ReadableStream<Uint8Array> | null {
    this.#used = true;
    return this.real().body;
  }
  get bodyUsed(): boolean {
    return this.#used || (this.#real?.bodyUsed ?? false);
  }
  private take(): Buffer {
    if (this.bodyUsed) throw new TypeError('Body is unusable: Body has already been read');
    this.#used = true;
    return this.buffer;
  }
  async text(): Promise<string> {
    return this.take().toString('utf8');
  }
  async json(): Promise<any> { // eslint-disable-line @typescript-eslint/no-explicit-any -- Response.json's own type
    return JSON.parse(await this.text());
  }
  async arrayBuffer(): Promise<ArrayBuffer> {
    const b = this.take();
    return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
  }
  async bytes(): Promise<Uint8Array> {
    return new Uint8Array(await this.arrayBuffer());
  }
  blob(): Promise<Blob> {
    this.#used = true;
    return this.real().blob();
  }
  formData(): Promise<FormData> {
    this.#used = true;
    return this.real().formData();
  }
  clone(): Response {
    return this.real().clone();
  }
}

/** The whole body (reading the rest of a stream); rejects if the connection breaks first. */
async function wholeBody(res: Reply): Promise<Buffer> {
  return res.whole ?? Buffer.concat(await res.stream.toArray());
}

/** Whether the reply is small, finite JSON that can be read whole before the descriptor sees it. */
const readWhole = (res: ReplyHead) =>
  res.headers['content-length'] !== undefined && String(res.headers['content-type'] ?? '').startsWith('application/json');

/**
 * POSTs the call; resolves with the reply once its headers (or, for JSON, its whole body) arrived. Once the signal
 * aborts, the request (and a reply still streaming) is destroyed; callers see signal.reason.
 */
function post(url: URL, call: ExecutorCall): Promise<Reply> {
  const { dispatcher, origin } = dispatcherFor(url);
  return new Promise((resolve, reject) => {
    dispatcher.dispatch(
      {
        origin,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        headers: { 'content-type': 'application/json', [DEADLINE_HEADER]: String(call.deadline), ...call.headers },
        body: JSON.stringify(call.request.body),
      },
      new ReplyHandler(call.signal, resolve, reject),
    );
  });
}

/** A body nobody may be listening to (a 204's, already resumed) must not turn its error into an uncaught one. */
function destroyQuietly(stream: Readable, err: unknown): void {
  stream.on('error', () => {});
  stream.destroy(err as Error);
}

/**
 * The reply of one call, on undici's dispatch handler API rather than its `request` API: a JSON reply read whole
 * (the common case) is gathered straight from the connection's chunks — no body stream, async resource or
 * consume machinery per call (docs/benchmarks/history.md, step 8); any other reply becomes a Readable fed with
 * back-pressure (its reads resume the paused connection). The signal aborts the request, and destroys a body
 * still streaming, as `request`'s own signal handling does.
 */
class ReplyHandler implements Dispatcher.DispatchHandler {
  #controller: Dispatcher.DispatchController | undefined;
  #settled = false;
  #chunks: Buffer[] | undefined;
  #head: ReplyHead | undefined;
  #stream: Readable | undefined;
  #done = false;

  /** Set in the constructor, not as a field initializer: no name defined on it per call (see lib/wait.ts SteppedTimer). */
  readonly #onAbort: () => void;

  constructor(
    private readonly signal: CutSignal,
    private readonly resolve: (reply: Reply) => void,
    private readonly reject: (e: unknown) => void,
  ) {
    this.#onAbort = () => {
      const reason = this.signal.reason as Error; // what the graph failed with (undici takes an Error)
      if (this.#stream) destroyQuietly(this.#stream, reason);
      else this.#controller?.abort(reason);
      this.#fail(reason);
    };
    signal.addEventListener('abort', this.#onAbort, { once: true });
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.signal.aborted) controller.abort(this.signal.reason as Error);
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusMessage?: string): void {
    if (statusCode < 200) return; // 1xx: informational, the reply follows
    const head: ReplyHead = { statusCode, statusText: statusMessage ?? '', headers };
    if (readWhole(head)) {
      this.#head = head;
      this.#chunks = [];
      return;
    }
    const stream = new Readable({
      read: () => controller.resume(),
      destroy: (err, cb) => {
        if (!this.#done) controller.abort(err ?? new Error('the reply body was destroyed'));
        this.#unhook();
        cb(err);
      },
    });
    this.#stream = stream;
    this.#settle(() => this.resolve({ ...head, stream }));
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#chunks) this.#chunks.push(chunk);
    else if (this.#stream && !this.#stream.push(chunk)) controller.pause();
  }

  onResponseEnd(): void {
    this.#done = true;
    if (this.#chunks) {
      this.#unhook();
      const whole = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
      this.#settle(() => this.resolve({ ...this.#head!, whole }));
    } else {
      this.#stream?.push(null);
    }
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.#done = true;
    this.#unhook();
    if (this.#stream && !this.#stream.destroyed) destroyQuietly(this.#stream, err);
    this.#fail(err);
  }

  #fail(e: unknown): void {
    this.#settle(() => this.reject(e));
  }

  #settle(f: () => void): void {
    if (this.#settled) return;
    this.#settled = true;
    f();
  }

  #unhook(): void {
    this.signal.removeEventListener('abort', this.#onAbort);
  }
}

/** Sends the call; resolves with the 2xx Response. Rejects with `signal.reason` once aborted. */
export async function callExecutor(call: ExecutorCall): Promise<Response> {
  const url = new URL(call.request.path, call.site.url);
  if (call.signal.aborted) throw call.signal.reason;
  let res: Reply;
  try {
    res = await post(url, call);
  } catch (e) {
    if (call.signal.aborted) throw call.signal.reason;
    const notDelivered = refusedToConnect(e);
    // Refused: the request never left. Otherwise it may have reached the executor, which then went away before answering.
    const what = notDelivered ? 'its executor could not be reached' : 'its executor\'s connection broke before it answered';
    throw new TaskFailedError(call.site, `${what}: ${describeFailure(e)}`, { internal: `request to ${url.href} failed: ${describeFailure(e)}`, notDelivered });
  }
  const status = res.statusCode;
  if (status >= 200 && status < 300) {
    if (res.whole) return new BufferedResponse(res, res.whole);
    const noBody = status === 204 || status === 304;
    if (noBody) res.stream.resume();
    const body = noBody ? null : (Readable.toWeb(res.stream) as ReadableStream<Uint8Array>);
    return new Response(body, { status, statusText: res.statusText, headers: webHeaders(res) });
  }
  let text = '';
  try {
    text = (await wholeBody(res)).toString('utf8');
  } catch {
    if (call.signal.aborted) throw call.signal.reason;
  }
  let body: unknown = text.slice(0, MAX_ERROR_BODY);
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  const internal = `HTTP ${status} from ${url.href}: ${text.slice(0, 500)}`;
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error;
  if (typeof error?.code === 'string' && typeof error.message === 'string') {
    // The executor's own error: its code and message go to the caller as they are (CLIENT sees e.g. MODEL_INPUT_CORRUPT).
    // What the user sent (a URL it refuses, say) is quoted back as written: only our own addresses are redacted.
    throw new TaskFailedError(call.site, error.message, { code: error.code, status, executorBody: body, executorDetails: error.details, internal, keep: userAddresses(call.request.body) });
  }
  const said = typeof body === 'string' && body ? `: ${body.slice(0, 200)}` : res.statusText ? ` (${res.statusText})` : '';
  throw new TaskFailedError(call.site, `its executor answered HTTP ${status}${said}`, { status, executorBody: body, internal });
}
