/**
 * FakeDispatcher: a GraphDispatcher for SDK tests that answers the way the real dispatcher does, without executors.
 *
 * For each dispatched graph it
 *  - records the graph JSON and the dispatch options (deep copies, so later mutation does not change them);
 *  - validates the graph with TaskGraph.fromJSON, as the real dispatcher does (a bad graph -> DispatchError 422);
 *  - wires DataForwards like the real dispatcher (control/dispatcher, cornserve.md §2.5): every invocation gets its
 *    executor's sidecar ranks; a forward in an output is a producer (src = those ranks), the same id in a later input
 *    is a consumer; every copy gets dst = one rank group per consuming invocation. Forwards that do not pair up fail
 *    the graph (GRAPH_INVALID);
 *  - answers with one output per invocation: the recorded placeholder with the ranks filled in (or what `output`
 *    makes of it), `{}` for a streaming last output plus the NDJSON lines of `streamChunks`;
 *  - honours the deadline and the abort signal while it "works" (`delayMs`), and fails on request (`fail`).
 */
import {
  DispatchError,
  TaskGraph,
  ValidationError,
  deadlineSignal,
  isDataForwardJSON,
  ndjsonLines,
  toJsonValue,
  type DataForwardJSON,
  type DispatchOptions,
  type DispatchResult,
  type GraphDispatcher,
  type TaskGraphJSON,
  type TaskInvocationJSON,
} from '../../functions/sdk/index.js';
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
    try {
      TaskGraph.fromJSON(graph);
    } catch (e) {
      if (e instanceof ValidationError) throw new DispatchError(e.message, 422, e.issues, e.code);
      throw e;
    }
    const wired = wireForwards(toJsonValue<TaskGraphJSON>(graph), this.opts.ranks ?? ranksByTask(graph));
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

/** Every DataForward JSON inside `value` (objects and arrays, any depth). */
export function findForwards(value: unknown): DataForwardJSON[] {
  if (isDataForwardJSON(value)) return [value];
  if (Array.isArray(value)) return value.flatMap(findForwards);
  if (value && typeof value === 'object') return Object.values(value).flatMap(findForwards);
  return [];
}

interface Production {
  invocation: number;
  copies: DataForwardJSON[];
  /** consuming invocation index -> its copies (a Map keeps first-consumption order) */
  consumers: Map<number, DataForwardJSON[]>;
}

/**
 * Fills in sidecar ranks in place, with the real dispatcher's rules: every copy of a forward gets src = its
 * producer's ranks and dst = one group per consuming invocation. A forward consumed but never produced, produced
 * twice, or produced but never consumed fails the graph (GRAPH_INVALID, 400) with every problem listed.
 */
export function wireForwards(graph: TaskGraphJSON, ranksOf: (inv: TaskInvocationJSON, index: number) => number[]): TaskGraphJSON {
  const produced = new Map<string, Production>();
  const problems: string[] = [];
  const name = (i: number) => `invocation ${i} (${graph.invocations[i]!.task_class})`;
  graph.invocations.forEach((inv, i) => {
    for (const consumer of findForwards(inv.input)) {
      const p = produced.get(consumer.id);
      if (!p) problems.push(`${name(i)} consumes DataForward ${consumer.id}, which no earlier invocation produces`);
      else p.consumers.set(i, [...(p.consumers.get(i) ?? []), consumer]);
    }
    for (const df of findForwards(inv.output)) {
      if (produced.has(df.id)) problems.push(`${name(i)} produces DataForward ${df.id}, which ${name(produced.get(df.id)!.invocation)} already produces`);
      else produced.set(df.id, { invocation: i, copies: [df], consumers: new Map() });
    }
  });
  for (const [id, p] of produced)
    if (p.consumers.size === 0) problems.push(`${name(p.invocation)} produces DataForward ${id}, but no later invocation consumes it`);
  if (problems.length) throw new DispatchError(`task graph: ${problems.join('; ')}`, 400, problems, 'GRAPH_INVALID');
  for (const p of produced.values()) {
    const src = ranksOf(graph.invocations[p.invocation]!, p.invocation);
    const dst = [...p.consumers.keys()].map((i) => ranksOf(graph.invocations[i]!, i));
    for (const df of [...p.copies, ...[...p.consumers.values()].flat()]) {
      df.src_sidecar_ranks = [...src];
      df.dst_sidecar_ranks = dst.map((g) => [...g]);
    }
  }
  return graph;
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
