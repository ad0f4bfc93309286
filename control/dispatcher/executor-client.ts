/**
 * One executor call: POST the descriptor's request to the leased executor over a keep-alive connection
 * pool, with the trace context and the graph's deadline in the headers. Failures become TaskFailedErrors
 * naming the invocation, task and executor; a non-2xx reply carries the executor's error body in details.
 *
 * The pool is an undici Agent (undici 7, already installed for @kubernetes/client-node) given to the
 * global fetch as its dispatcher. Its own timeouts are off: the graph's AbortSignal bounds every call.
 */
import { Agent } from 'undici';
import { DEADLINE_HEADER } from '../../functions/sdk/index.js';
import type { ExecutorRequest } from '../descriptors/types.js';
import { TaskFailedError, type FailureSite } from './errors.js';

export const executorAgent = new Agent({
  keepAliveTimeout: 30_000,
  keepAliveMaxTimeout: 600_000,
  headersTimeout: 0, // the deadline bounds the wait, not undici
  bodyTimeout: 0,
});

/** The same Agent, typed for the global fetch (whose types come from Node's bundled undici 6). */
const poolForFetch = executorAgent as unknown as NonNullable<RequestInit['dispatcher']>;

/** Largest error body kept in an error's details. */
const MAX_ERROR_BODY = 8 * 1024;

export interface ExecutorCall {
  site: FailureSite;
  request: ExecutorRequest;
  deadline: number;
  /** Extra headers (traceparent). */
  headers: Record<string, string>;
  signal: AbortSignal;
}

/** A short description of a fetch failure: "connect ECONNREFUSED 127.0.0.1:1234", "other side closed", ... */
export function describeFailure(e: unknown): string {
  const err = e as { message?: string; cause?: { message?: string; code?: string } };
  const cause = err?.cause?.message ?? err?.cause?.code;
  return cause ? `${err.message ?? 'error'} (${cause})` : (err?.message ?? String(e));
}

/** Sends the call; resolves with the 2xx Response (body unread). Rejects with `signal.reason` once aborted. */
export async function callExecutor(call: ExecutorCall): Promise<Response> {
  const url = new URL(call.request.path, call.site.url);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [DEADLINE_HEADER]: String(call.deadline), ...call.headers },
      body: JSON.stringify(call.request.body),
      signal: call.signal,
      dispatcher: poolForFetch,
    });
  } catch (e) {
    if (call.signal.aborted) throw call.signal.reason;
    throw new TaskFailedError(call.site, `request to ${url.href} failed: ${describeFailure(e)}`);
  }
  if (res.ok) return res;
  let text = '';
  try {
    text = await res.text();
  } catch (e) {
    if (call.signal.aborted) throw call.signal.reason;
  }
  let body: unknown = text.slice(0, MAX_ERROR_BODY);
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: keep the text */
  }
  const message = (body as { error?: { message?: string } })?.error?.message ?? (typeof body === 'string' && body ? body.slice(0, 200) : res.statusText);
  throw new TaskFailedError(call.site, `HTTP ${res.status}: ${message}`, { status: res.status, executorError: body });
}
