/**
 * The store link: the part of a Store that graph dispatch uses, served by the `cornserve up` process to its app
 * functions over a unix socket (plain `up` runs each app function's task graphs in its own process, and
 * the executor leases must still be counted in the one in-memory Store every app function and the dispatcher share).
 *
 * Wire format, both ways: one JSON object per line (NDJSON; JSON.stringify never writes a raw newline).
 *   client -> server   {"i":7,"m":"adjustOutstanding","a":["ex-1",1]}    a call (i: the client's call id)
 *   server -> client   {"i":7,"r":3}                                      its result (absent r = undefined)
 *                      {"i":7,"e":{"code":"STORE_NOT_FOUND","message":"…","kind":"executor","id":"ex-1"}}
 *                      {"c":{"kind":"route",…}}                            a change notification (after "subscribe";
 *                                                                          task, route and autoscale changes only)
 * Only the methods in LINK_METHODS are served: the app function's process runs user code, and dispatch needs no more.
 */
import type { Store, StoreChange } from '../../lib/store.js';
import { StoreError, StoreNotFoundError, StoreUnavailableError } from '../../lib/store-errors.js';

/** The Store methods graph dispatch calls (Router, LoadRecorder, LiveServiceRecorder), besides subscribe. */
export const LINK_METHODS = ['getTask', 'listExecutors', 'adjustOutstanding', 'getAutoscale', 'addCounters', 'wakeTask', 'putExecutorStats'] as const;
export type LinkMethod = (typeof LINK_METHODS)[number];

/** What graph dispatch needs of a Store: a Store, a Redis store, or a StoreLink to the `up` process's store. */
export type DispatchStore = Pick<Store, LinkMethod | 'subscribe' | 'subscriptionReady'>;

/**
 * A store that takes lease changes without the caller waiting for the count (the store link: StoreLink batches them
 * per executor and sends them shortly after). `onCount` is told the executor's count when the change is applied.
 */
export interface ReportsOutstanding {
  reportOutstanding(executorId: string, delta: number, onCount?: (outstanding: number) => void): void;
}

/** The change notifications the link forwards: what the Router watches (its route cache, scale from zero). */
export const LINK_CHANGE_KINDS: ReadonlySet<StoreChange['kind']> = new Set(['task', 'route', 'autoscale']);

/** The verb that turns change notifications on for the connection. */
export const SUBSCRIBE = 'subscribe';

export interface LinkCall {
  i: number;
  m: LinkMethod | typeof SUBSCRIBE;
  a?: unknown[];
}

export interface LinkErrorBody {
  code: string;
  message: string;
  kind?: string;
  id?: string;
}

/** A thrown value as the line's error body (a not-found keeps what its class needs: dispatch branches on it). */
export function errorBody(e: unknown): LinkErrorBody {
  if (e instanceof StoreNotFoundError) return { code: e.code, message: e.message, kind: e.kind, id: e.id };
  if (e instanceof StoreError) return { code: e.code, message: e.message };
  return { code: 'STORE_UNAVAILABLE', message: e instanceof Error ? e.message : String(e) };
}

/** The Store error an error body stands for: StoreNotFoundError as with a local store, anything else unavailable. */
export function errorFromBody(b: LinkErrorBody, method: string): Error {
  if (b.code === 'STORE_NOT_FOUND' && b.id !== undefined) return new StoreNotFoundError(b.kind as StoreNotFoundError['kind'], b.id);
  return new StoreUnavailableError(`${method} over the store link`, { cause: new Error(b.message) });
}

/** Splits a stream of utf8 text into lines, calling `onLine` for each complete one. */
export function lineSplitter(onLine: (line: string) => void): (chunk: string) => void {
  let rest = '';
  return (chunk) => {
    let start = 0;
    let nl = chunk.indexOf('\n');
    if (nl < 0) {
      rest += chunk;
      return;
    }
    onLine(rest + chunk.slice(0, nl));
    rest = '';
    start = nl + 1;
    while ((nl = chunk.indexOf('\n', start)) >= 0) {
      onLine(chunk.slice(start, nl));
      start = nl + 1;
    }
    rest = chunk.slice(start);
  };
}
