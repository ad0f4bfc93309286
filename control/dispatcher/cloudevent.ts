/**
 * The receiving side of the app function -> dispatcher CloudEvent (docs/architecture.md §4):
 * type `ai.cornserve.taskgraph.invoke`, source `/apps/<app_id>`, data = the task graph JSON,
 * extensions `deadline` (epoch ms) and `traceparent`. Binary mode is the contract; structured mode is
 * accepted too (HTTP.toEvent reads both).
 *
 * The hot path: a binary-mode event exactly as app functions send it (spec 1.0, our type, an `/apps/<id>`
 * source, JSON data, no other extensions) is read straight from the headers. Anything else — or anything
 * that fails there — goes through the SDK's generic parser, which produces the precise 400.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { HTTP, type CloudEventV1 } from 'cloudevents';
import { parseDeadline } from '../../lib/deadline.js';
import { TASKGRAPH_EVENT_TYPE } from '../../functions/sdk/index.js';
import { DeadlineInvalidError, EventInvalidError } from '../../lib/dispatch-errors.js';

const APP_SOURCE = /^\/apps\/([^/]+)$/;

/** What the dispatcher needs from a request, whichever route it came by. */
export interface GraphRequest {
  /** The task graph JSON, not yet validated. */
  graph: unknown;
  deadline: number;
  traceparent?: string;
  /** For metrics and spans: the app id from `/apps/<id>`, or a label for direct callers. */
  app: string;
}

/** A graph's deadline by lib/deadline's rule (epoch ms; absent = now + 5 minutes); a bad one is DEADLINE_INVALID. */
export function graphDeadline(value: unknown, where: string): number {
  return parseDeadline(value, { where, invalid: (message) => new DeadlineInvalidError(message) });
}

function eventData(ev: CloudEventV1<unknown>): unknown {
  const data = ev.data ?? ev.data_base64;
  if (data === undefined) throw new EventInvalidError('the CloudEvent has no data; it must carry the task graph JSON');
  if (typeof data !== 'string' && !(data instanceof Uint8Array)) return data;
  const text = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new EventInvalidError(`the CloudEvent data is not JSON: ${(e as Error).message}`);
  }
}

/** The `ce-` headers the fast path understands; any other makes it defer to the SDK. */
const KNOWN_CE_HEADERS = new Set(['ce-specversion', 'ce-id', 'ce-type', 'ce-source', 'ce-time', 'ce-deadline', 'ce-traceparent', 'ce-datacontenttype']);

/** The common binary-mode event read without the SDK, or undefined when it is not that simple. */
function parseBinaryFast(headers: IncomingHttpHeaders, body: unknown): GraphRequest | undefined {
  if (typeof body !== 'string' || headers['ce-specversion'] !== '1.0' || headers['ce-type'] !== TASKGRAPH_EVENT_TYPE) return undefined;
  const id = headers['ce-id'];
  const source = headers['ce-source'];
  const time = headers['ce-time'];
  if (typeof id !== 'string' || id === '' || typeof source !== 'string') return undefined;
  if (time !== undefined && (typeof time !== 'string' || Number.isNaN(Date.parse(time)))) return undefined;
  if (!String(headers['content-type'] ?? '').startsWith('application/json')) return undefined;
  for (const name in headers) if (name.startsWith('ce-') && !KNOWN_CE_HEADERS.has(name)) return undefined;
  const app = APP_SOURCE.exec(source)?.[1];
  if (app === undefined) return undefined;
  let graph: unknown;
  try {
    graph = JSON.parse(body);
  } catch {
    return undefined;
  }
  const tp = headers['ce-traceparent'] ?? headers.traceparent;
  const traceparent = typeof tp === 'string' ? tp : undefined;
  return { graph, deadline: graphDeadline(headers['ce-deadline'], 'the CloudEvent extension `deadline`'), ...(traceparent ? { traceparent } : {}), app };
}

/** Reads a task-graph CloudEvent from an HTTP request (body as text). Throws 400s for anything else. */
export function parseInvokeEvent(headers: IncomingHttpHeaders, body: unknown): GraphRequest {
  const fast = parseBinaryFast(headers, body);
  if (fast) return fast;
  let ev: CloudEventV1<unknown> | CloudEventV1<unknown>[];
  try {
    ev = HTTP.toEvent({ headers, body: typeof body === 'string' ? body : undefined });
  } catch (e) {
    throw new EventInvalidError(`not a valid CloudEvent: ${(e as Error).message}`);
  }
  if (Array.isArray(ev)) throw new EventInvalidError('batched CloudEvents are not accepted; send one task graph per event');
  if (ev.type !== TASKGRAPH_EVENT_TYPE) throw new EventInvalidError(`CloudEvent type must be ${TASKGRAPH_EVENT_TYPE}, got ${ev.type ?? '(none)'}`);
  const traceparent = typeof ev.traceparent === 'string' ? ev.traceparent : typeof headers.traceparent === 'string' ? headers.traceparent : undefined;
  return {
    graph: eventData(ev),
    deadline: graphDeadline(ev.deadline, 'the CloudEvent extension `deadline`'),
    ...(traceparent ? { traceparent } : {}),
    app: APP_SOURCE.exec(ev.source)?.[1] ?? ev.source,
  };
}
