/**
 * How a recorded task graph reaches executors: an injected GraphDispatcher.
 *
 * The app-function runtime installs one that sends CloudEvents to the dispatcher; scripts and notebooks
 * use GatewayDispatcher (POST /tasks/invoke on the gateway); tests inject fakes.
 */
import { DispatchError, type ErrorJSON } from './errors.js';
import type { TaskGraph, TaskGraphJSON } from './graph.js';
import { ndjsonLines } from './stream.js';

export interface DispatchOptions {
  /** Epoch ms after which the whole graph is cancelled. */
  deadline: number;
  signal?: AbortSignal;
  /** W3C trace context of the caller. */
  traceparent?: string;
  appId?: string;
}

/**
 * The part of AbortSignal a dispatch in this process listens to: an AbortSignal fits, and so does the runtime's
 * cheaper per-request cut (lib/cut-signal.ts), which needs no EventTarget.
 */
export interface CutSignal {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, opts?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/** DispatchOptions for a graph dispatched in this process: its signal may be a CutSignal. */
export type RecordedDispatchOptions = Omit<DispatchOptions, 'signal'> & { signal?: CutSignal };

export interface DispatchResult {
  /** One JSON output per invocation, in order (a streaming last output is `{}`). */
  outputs: unknown[];
  /** The raw NDJSON lines of the last output, when the graph streams. */
  stream?: AsyncIterable<string>;
}

export interface GraphDispatcher {
  dispatch(graph: TaskGraphJSON, options: DispatchOptions): Promise<DispatchResult>;
  /**
   * Optional, for a dispatcher that runs graphs in this process: takes the recorded graph itself (task.call() uses
   * it when present), so the graph skips the JSON round trip and the re-validation of what this process recorded,
   * and the request's cancellation can be a CutSignal. Must behave exactly as dispatch(graph.toJSON(), options).
   */
  dispatchRecorded?(graph: TaskGraph, options: RecordedDispatchOptions): Promise<DispatchResult>;
}

export const DEFAULT_DEADLINE_MS = 5 * 60_000;
export const DEADLINE_HEADER = 'x-cornserve-deadline';
/** The CloudEvent type of a task graph sent by an app function to the dispatcher (both sides read it here). */
export const TASKGRAPH_EVENT_TYPE = 'ai.cornserve.taskgraph.invoke';

let defaultDispatcher: GraphDispatcher | undefined;

/** Installed once per process by the app-function runtime (or by a script). */
export function setDefaultDispatcher(d: GraphDispatcher | undefined): void {
  defaultDispatcher = d;
}

export function getDefaultDispatcher(): GraphDispatcher {
  return defaultDispatcher ?? new GatewayDispatcher(globalThis.process?.env.CORNSERVE_GATEWAY_URL ?? 'http://127.0.0.1:8000');
}

/** The longest delay a timer takes (≈ 24.8 days; lib/wait MAX_TIMER_MS, the SDK imports nothing from lib): Node fires a longer one after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A signal that fires at the deadline or when `signal` does (a deadline past a timer's range never fires). */
export function deadlineSignal(deadline: number, signal?: AbortSignal): AbortSignal {
  const ms = Math.max(1, deadline - Date.now());
  if (ms > MAX_TIMER_MS) return signal ?? new AbortController().signal;
  const timeout = AbortSignal.timeout(ms);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

/**
 * Reads a dispatch reply: JSON outputs, or NDJSON whose first line is the outputs array and whose
 * remaining lines are the last output's stream. Error replies become DispatchErrors with their code.
 */
export async function readDispatchResponse(res: Response): Promise<DispatchResult> {
  if (!res.ok) {
    const text = await res.text();
    let err: ErrorJSON | undefined;
    try {
      err = (JSON.parse(text) as { error?: ErrorJSON }).error;
    } catch {
      /* not JSON */
    }
    throw new DispatchError(err?.message ?? `dispatch failed with HTTP ${res.status}: ${text.slice(0, 200)}`, res.status, err?.details, err?.code);
  }
  const type = res.headers.get('content-type') ?? '';
  if (!type.includes('ndjson')) {
    const outputs = (await res.json()) as unknown;
    if (!Array.isArray(outputs)) throw new DispatchError('dispatch reply is not a JSON array of outputs');
    return { outputs };
  }
  if (!res.body) throw new DispatchError('streaming dispatch reply has no body');
  const lines = ndjsonLines(res.body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new DispatchError('streaming dispatch reply ended before its outputs line');
  const outputs = JSON.parse(first.value) as unknown;
  if (!Array.isArray(outputs)) throw new DispatchError('first line of a streaming dispatch reply is not an array of outputs');
  return { outputs, stream: throwOnErrorLine(lines) };
}

/**
 * A stream that breaks after its reply started ends with one line `{"error": {code, message, details?}}`
 * (the dispatcher's and the app runtime's convention): that line ends the stream with a DispatchError.
 */
export function parseErrorLine(line: string): DispatchError | undefined {
  if (!line.startsWith('{"error"')) return undefined;
  try {
    const v = JSON.parse(line) as { error?: ErrorJSON };
    if (Object.keys(v).length !== 1 || typeof v.error?.code !== 'string' || typeof v.error.message !== 'string') return undefined;
    return new DispatchError(v.error.message, 502, v.error.details, v.error.code);
  } catch {
    return undefined;
  }
}

async function* throwOnErrorLine(lines: AsyncIterator<string>): AsyncGenerator<string> {
  try {
    for (let r = await lines.next(); !r.done; r = await lines.next()) {
      const err = parseErrorLine(r.value);
      if (err) throw err;
      yield r.value;
    }
  } finally {
    await lines.return?.();
  }
}

/** Dispatches through the gateway's POST /tasks/invoke (scripts, notebooks, tests against a running platform). */
export class GatewayDispatcher implements GraphDispatcher {
  constructor(readonly gatewayUrl: string) {}

  async dispatch(graph: TaskGraphJSON, options: DispatchOptions): Promise<DispatchResult> {
    const headers: Record<string, string> = { 'content-type': 'application/json', [DEADLINE_HEADER]: String(options.deadline) };
    if (options.traceparent) headers.traceparent = options.traceparent;
    const res = await fetch(new URL('/tasks/invoke', this.gatewayUrl), {
      method: 'POST',
      headers,
      body: JSON.stringify(graph),
      signal: deadlineSignal(options.deadline, options.signal),
    });
    return readDispatchResponse(res);
  }
}
