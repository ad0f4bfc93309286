/**
 * CloudEventDispatcher: the GraphDispatcher of app functions. Each task.call() becomes one CloudEvent
 * (HTTP binary mode, docs/architecture.md §4) POSTed to the dispatcher over a keep-alive connection:
 *   type `ai.cornserve.taskgraph.invoke`, source `/apps/<app_id>`, data = the task graph JSON,
 *   extensions `traceparent` (W3C) and `deadline` (epoch ms).
 * The W3C `traceparent` and `x-cornserve-deadline` headers are sent as well, so plain HTTP middleware
 * sees them too. The reply is read with readDispatchResponse (JSON outputs, or NDJSON for a stream).
 */
import { randomUUID } from 'node:crypto';
import { Agent, request, type IncomingMessage, type RequestOptions } from 'node:http';
import { Readable } from 'node:stream';
import {
  DEADLINE_HEADER,
  DispatchError,
  readDispatchResponse,
  TASKGRAPH_EVENT_TYPE,
  type DispatchOptions,
  type DispatchResult,
  type GraphDispatcher,
  type TaskGraphJSON,
} from '../sdk/index.js';
import { readWhole } from '../../lib/http.js';
import { SpanKind, currentTraceparent, tracingOn, withSpan } from '../../lib/telemetry.js';
import { requestTarget } from '../../lib/unix-url.js';
import { deadlineTimer } from '../../lib/wait.js';

export interface CloudEventDispatcherOptions {
  /** Used as the event source (`/apps/<appId>`) when the dispatch options carry none. */
  appId?: string;
  /** Keep-alive agent; one is made per dispatcher when absent. */
  agent?: Agent;
}

/**
 * Builds the binary-mode HTTP message (headers + body) for one task graph. Written directly (what
 * `HTTP.binary(new CloudEvent(...))` produces, without its per-event schema validation: every attribute
 * here is ours and valid by construction).
 */
export function taskGraphEvent(graph: TaskGraphJSON, appId: string, deadline: number, traceparent?: string): { headers: Record<string, string>; body: string } {
  const body = JSON.stringify(graph);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(body)),
    'ce-id': randomUUID(),
    'ce-time': new Date().toISOString(),
    'ce-type': TASKGRAPH_EVENT_TYPE,
    'ce-source': `/apps/${appId}`,
    'ce-specversion': '1.0',
    'ce-deadline': String(deadline),
    [DEADLINE_HEADER]: String(deadline),
  };
  if (traceparent) headers['ce-traceparent'] = headers.traceparent = traceparent;
  return { headers, body };
}

function toResponse(res: IncomingMessage): Response {
  const headers = new Headers();
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
  const noBody = res.statusCode === 204 || res.statusCode === 304;
  if (noBody) res.resume();
  return new Response(noBody ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status: res.statusCode ?? 500, headers });
}

async function readJsonOutputs(res: IncomingMessage): Promise<DispatchResult> {
  const body = await readWhole(res, Infinity);
  let outputs: unknown;
  try {
    outputs = JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw new DispatchError(`dispatch reply is not JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(outputs)) throw new DispatchError('dispatch reply is not a JSON array of outputs');
  return { outputs };
}

const cancelled = () => new DispatchError('the request was cancelled', 499, undefined, 'CANCELLED');

export class CloudEventDispatcher implements GraphDispatcher {
  readonly #agent: Agent;
  readonly #url: URL;
  /** Every request's options but the headers: the target (host/port, or the unix socket of an http+unix:// URL), POST and the keep-alive agent. */
  readonly #requestBase: RequestOptions;

  constructor(
    dispatcherUrl: string,
    private readonly options: CloudEventDispatcherOptions = {},
  ) {
    this.#url = new URL(dispatcherUrl);
    this.#agent = options.agent ?? new Agent({ keepAlive: true, maxSockets: 256 });
    this.#requestBase = { ...requestTarget(this.#url), method: 'POST', agent: this.#agent };
  }

  async dispatch(graph: TaskGraphJSON, options: DispatchOptions): Promise<DispatchResult> {
    const appId = options.appId ?? this.options.appId ?? 'unknown';
    if (!tracingOn()) {
      const { headers, body } = taskGraphEvent(graph, appId, options.deadline, options.traceparent);
      return this.#post(headers, body, options.deadline, options.signal);
    }
    return withSpan(
      'function.dispatch',
      async () => {
        // The active span (this one) is the parent of the dispatcher's span; fall back to the scope's traceparent.
        const traceparent = currentTraceparent() ?? options.traceparent;
        const { headers, body } = taskGraphEvent(graph, appId, options.deadline, traceparent);
        return this.#post(headers, body, options.deadline, options.signal);
      },
      { 'cornserve.app_id': appId, 'cornserve.invocations': graph.invocations.length },
      SpanKind.CLIENT,
    );
  }

  /**
   * One POST. The deadline (a timer) and the caller's signal destroy the request — also while a streamed
   * reply is being read — with a DispatchError saying which; both are released when the reply ends.
   */
  #post(headers: Record<string, string>, body: string, deadline: number, signal?: AbortSignal): Promise<DispatchResult> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(cancelled());
      const req = request({ ...this.#requestBase, headers });
      const onAbort = () => req.destroy(cancelled());
      const timer = deadlineTimer(deadline, () => req.destroy(new DispatchError('the task graph did not finish before the request deadline', 504, undefined, 'DEADLINE_EXCEEDED')));
      const release = () => {
        timer.clear();
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('response', (res) => {
        res.on('close', release);
        // Fast path for the common reply (200 JSON outputs); streams and errors go through readDispatchResponse.
        if (res.statusCode === 200 && String(res.headers['content-type'] ?? '').startsWith('application/json')) readJsonOutputs(res).then(resolve, reject);
        else readDispatchResponse(toResponse(res)).then(resolve, reject);
      });
      req.on('error', (e) => {
        release();
        reject(e instanceof DispatchError ? e : new DispatchError(`cannot reach the dispatcher at ${this.#url.protocol === 'http:' ? this.#url.origin : this.#url.href}: ${e.message}`, 503, undefined, 'DISPATCHER_UNAVAILABLE'));
      });
      req.end(body);
    });
  }

  /** Closes idle keep-alive sockets. */
  close(): void {
    if (!this.options.agent) this.#agent.destroy();
  }
}
