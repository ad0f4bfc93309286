/**
 * FakeDispatcher: a GraphDispatcher for SDK tests that answers the way the real dispatcher does, without executors.
 *
 * For each dispatched graph it
 *  - records the graph JSON and the dispatch options (deep copies, so later mutation does not change them);
 *  - validates the graph with TaskGraph.fromJSON, as the real dispatcher does (a bad graph -> DispatchError 422);
 *  - wires DataForwards with the real dispatcher's wireDataForwards (policies/wiring.ts): every invocation
 *    gets its executor's sidecar ranks; forwards that do not pair up fail the graph (DispatchError GRAPH_INVALID, 400);
 *  - answers with one output per invocation: the recorded placeholder with the ranks filled in (or what `output`
 *    makes of it), `{}` for a streaming last output plus the NDJSON lines of `streamChunks`;
 *  - honours the deadline and the abort signal while it "works" (`delayMs`), and fails on request (`fail`).
 */
import {
  DispatchError,
  TaskGraph,
  ValidationError,
  deadlineSignal,
  ndjsonLines,
  toJsonValue,
  type DispatchOptions,
  type DispatchResult,
  type GraphDispatcher,
  type TaskGraphJSON,
  type TaskInvocationJSON,
} from '../../functions/sdk/index.js';
import { GraphInvalidError } from '../../lib/dispatch-errors.js';
import { wireDataForwards } from '../../policies/wiring.js';
import { sleep } from '../../lib/wait.js';

export interface FakeDispatcherOptions {
  /** Sidecar ranks of the executor that serves invocation `index`. Default: one rank per distinct task id, by first use. */
  ranks?: (invocation: TaskInvocationJSON, index: number) => number[];
  /** The real output of a non-streaming invocation; `wired` is the placeholder with ranks filled in (the default). */
  output?: (invocation: TaskInvocationJSON, wired: unknown, index: number) => unknown;
  /** Chunks of a streaming last output, one NDJSON line each. `n` counts dispatches from 0. */
  streamChunks?: unknown[] | ((graph: TaskGraphJSON, n: number) => unknown[]);
  /** Raw stream lines, sent as they are (for malformed-stream tests); wins over streamChunks. */
  streamLines?: string[];
  /** Split the stream's NDJSON bytes into pieces of this size and re-frame them with ndjsonLines, as a reply body would be. */
  streamPieceBytes?: number;
  /** Work time of dispatch `n` in ms; the deadline and the signal cut it short. */
  delayMs?: number | ((graph: TaskGraphJSON, n: number) => number);
  /** An error to fail dispatch `n` with (after its delay), or undefined to succeed. */
  fail?: (graph: TaskGraphJSON, n: number) => Error | undefined;
}

export interface DispatchRecord {
  graph: TaskGraphJSON;
  options: Omit<DispatchOptions, 'signal'> & { signal?: AbortSignal };
}

export class FakeDispatcher implements GraphDispatcher {
  readonly dispatched: DispatchRecord[] = [];

  constructor(private readonly opts: FakeDispatcherOptions = {}) {}

  /** The graphs received so far, in arrival order. */
  get graphs(): TaskGraphJSON[] {
    return this.dispatched.map((d) => d.graph);
  }

  async dispatch(graphJson: TaskGraphJSON, options: DispatchOptions): Promise<DispatchResult> {
    const n = this.dispatched.length;
    const graph = toJsonValue<TaskGraphJSON>(graphJson);
    this.dispatched.push({ graph, options: { ...options } });
    if (options.deadline <= Date.now()) throw deadlineExceeded();
    if (options.signal?.aborted) throw cancelled();
    let typed: TaskGraph;
    try {
      typed = TaskGraph.fromJSON(graph);
    } catch (e) {
      if (e instanceof ValidationError) throw new DispatchError(e.message, 422, e.issues, e.code);
      throw e;
    }
    const wired = wireForwards(typed, toJsonValue<TaskGraphJSON>(graph), this.opts.ranks ?? ranksByTask(graph));
    const delay = typeof this.opts.delayMs === 'function' ? this.opts.delayMs(graph, n) : (this.opts.delayMs ?? 0);
    if (delay > 0) await work(delay, options);
    const failure = this.opts.fail?.(graph, n);
    if (failure) throw failure;
    const last = wired.invocations.length - 1;
    const outputs = wired.invocations.map((inv, i) =>
      wired.is_streaming && i === last ? {} : this.opts.output ? this.opts.output(inv, inv.output, i) : inv.output,
    );
    if (!wired.is_streaming) return { outputs };
    return { outputs, stream: this.#stream(graph, n) };
  }

  #stream(graph: TaskGraphJSON, n: number): AsyncIterable<string> {
    const chunks = typeof this.opts.streamChunks === 'function' ? this.opts.streamChunks(graph, n) : (this.opts.streamChunks ?? []);
    const lines = this.opts.streamLines ?? chunks.map((c) => JSON.stringify(c));
    const piece = this.opts.streamPieceBytes;
    if (!piece) return fromArray(lines);
    const bytes = new TextEncoder().encode(lines.map((l) => `${l}\n`).join(''));
    const pieces: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; i += piece) pieces.push(bytes.subarray(i, i + piece));
    return ndjsonLines(fromArray(pieces));
  }
}

function cancelled(): DispatchError {
  return new DispatchError('the caller went away', 499, undefined, 'DISPATCH_CANCELLED');
}

function deadlineExceeded(): DispatchError {
  return new DispatchError('the task graph did not finish before its deadline', 504, undefined, 'DEADLINE_EXCEEDED');
}

async function work(ms: number, options: DispatchOptions): Promise<void> {
  const signal = deadlineSignal(options.deadline, options.signal);
  try {
    await sleep(ms, signal);
  } catch (e) {
    if (options.signal?.aborted) throw cancelled();
    if (Date.now() >= options.deadline || (e as Error).name === 'TimeoutError') throw deadlineExceeded();
    throw e;
  }
}

async function* fromArray<T>(items: readonly T[]): AsyncGenerator<T> {
  for (const x of items) yield x;
}

/** One rank per distinct task id, numbered by first use (two invocations of one task share an executor). */
function ranksByTask(graph: TaskGraphJSON): (inv: TaskInvocationJSON) => number[] {
  const ids = [...new Set(graph.invocations.map((inv) => inv.task.id))];
  return (inv) => [ids.indexOf(inv.task.id)];
}

/**
 * Fills in the sidecar ranks of `json` (a copy of `typed`'s JSON) in place with the real dispatcher's wiring; a graph
 * whose forwards do not pair up fails as the dispatcher's reply would (DispatchError GRAPH_INVALID, 400).
 */
function wireForwards(typed: TaskGraph, json: TaskGraphJSON, ranksOf: (inv: TaskInvocationJSON, index: number) => number[]): TaskGraphJSON {
  const onJson = new TaskGraph(json.invocations.map((inv, i) => ({ task: typed.invocations[i]!.task, input: inv.input, output: inv.output })));
  try {
    wireDataForwards(onJson, (i) => ranksOf(json.invocations[i]!, i));
  } catch (e) {
    if (e instanceof GraphInvalidError) throw new DispatchError(e.message, e.status, e.details, e.code);
    throw e;
  }
  return json;
}

/** An OpenAI chat chunk carrying `content` (what an LLM or audio generator stream holds). */
export function textChunk(content: string, index = 0): Record<string, unknown> {
  return {
    id: `chatcmpl-${index}`,
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'fake',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
  };
}
