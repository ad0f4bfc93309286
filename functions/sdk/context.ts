/**
 * Record and replay.
 *
 * `task.call(input)` runs the task's invoke() twice inside a fresh TaskContext:
 *  1. record: each unit-task invoke() validates its input, returns a placeholder output and is recorded;
 *  2. the recorded graph is dispatched (all invocations at once; executors wire data through sidecars);
 *  3. replay: each unit-task invoke() returns its real output, in call order.
 * Record and replay are synchronous, so the current context is a plain variable set around them (no
 * AsyncLocalStorage: it would add promise-hook work to every request); concurrent calls never mix because
 * their record and replay sections cannot interleave. A context is used once.
 *
 * The request scope (deadline, cancellation, trace context, dispatcher, the app's declared tasks) is set
 * by the app-function runtime around serve() and read by every call made inside it.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  DeterminismViolationError,
  DispatchError,
  RecordReplayError,
  UndeclaredTaskError,
  ValidationError,
  formatIssues,
} from './errors.js';
import { toJsonValue } from './ids.js';
import { Stream } from './stream.js';
import { TaskGraph } from './graph.js';
import { DEFAULT_DEADLINE_MS, getDefaultDispatcher, type CutSignal, type DispatchResult, type GraphDispatcher } from './dispatch.js';
import { UnitTask, unitTaskKey, type Task } from './task.js';

export interface RequestScope {
  deadline?: number;
  signal?: AbortSignal;
  /**
   * The same cancellation as `signal`, in the cheap form a dispatcher in this process takes (GraphDispatcher
   * dispatchRecorded): the runtime sets both and makes `signal` only when something reads it.
   */
  cancel?: CutSignal;
  traceparent?: string;
  dispatcher?: GraphDispatcher;
  /** unitTaskKey()s of the tasks the app declared; a call to any other unit task fails at record time. */
  allowedTaskKeys?: ReadonlySet<string>;
  appId?: string;
}

export interface CallOptions {
  /** Epoch ms; the earliest of this, timeoutMs and the request scope's deadline wins. */
  deadline?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  dispatcher?: GraphDispatcher;
}

const scopeStorage = new AsyncLocalStorage<RequestScope>();
/** The context whose record() or replay() is running (synchronously) right now. */
let activeContext: TaskContext | undefined;

export function runInRequestScope<T>(scope: RequestScope, fn: () => T): T {
  return scopeStorage.run(scope, fn);
}

export function currentRequestScope(): RequestScope | undefined {
  return scopeStorage.getStore();
}

/** The context that is recording or replaying right now (only during those synchronous sections). */
export function currentContext(): TaskContext | undefined {
  return activeContext;
}

/** Runs `fn` with `ctx` as the current context, restoring the previous one after. */
function withContext<T>(ctx: TaskContext, fn: () => T): T {
  const previous = activeContext;
  activeContext = ctx;
  try {
    return fn();
  } finally {
    activeContext = previous;
  }
}

type Phase = 'new' | 'recording' | 'recorded' | 'replaying' | 'done';

interface RecordedCall {
  task: UnitTask;
  input: unknown;
  placeholder: unknown;
}

export class TaskContext {
  #phase: Phase = 'new';
  readonly #calls: RecordedCall[] = [];
  #outputs: unknown[] | undefined;
  #replayed = 0;
  /** A unit task's call() already parsed its input with the same schema: its record does not parse it again. */
  #parsed: { task: UnitTask; input: unknown } | undefined;

  constructor(private readonly allowedTaskKeys?: ReadonlySet<string>) {}

  get phase(): Phase {
    return this.#phase;
  }

  /** Marks `input` as already parsed by `task`'s input schema (the unit task whose call() this context runs). */
  markParsed(task: UnitTask, input: unknown): void {
    this.#parsed = { task, input };
  }

  record(fn: () => unknown): void {
    if (this.#phase === 'recording') throw new RecordReplayError('cannot start a record inside a record');
    if (this.#phase === 'replaying') throw new RecordReplayError('cannot record while replaying');
    if (this.#phase !== 'new') throw new RecordReplayError('a task context is used once; it cannot record again');
    this.#phase = 'recording';
    try {
      const r = withContext(this, fn);
      if (r && typeof (r as PromiseLike<unknown>).then === 'function') {
        // The async body goes on after this throw and fails on its next unit-task call; that rejection is ours, not an unhandled one.
        (r as PromiseLike<unknown>).then(undefined, () => {});
        throw new RecordReplayError('invoke() must be synchronous, but it returned a Promise');
      }
    } finally {
      this.#phase = 'recorded';
    }
  }

  /** The recorded graph, or undefined when invoke() called no unit task. */
  graph(): TaskGraph | undefined {
    if (this.#phase !== 'recorded') throw new RecordReplayError('the graph exists only between record and replay');
    // The recorded inputs are already private JSON copies: toJSON() need not copy them again.
    return this.#calls.length
      ? new TaskGraph(this.#calls.map((c) => ({ task: c.task, input: c.input, output: c.placeholder })), { inputsAreJson: true })
      : undefined;
  }

  invokeUnit(task: UnitTask, input: unknown): unknown {
    if (this.#phase === 'recording') return this.#record(task, input);
    if (this.#phase === 'replaying') return this.#replay(task);
    throw new RecordReplayError(`${task.name}.invoke() called while its context is ${this.#phase}; unit tasks run only inside task.call()`);
  }

  #record(task: UnitTask, input: unknown): unknown {
    if (this.allowedTaskKeys && !this.allowedTaskKeys.has(unitTaskKey(task))) throw new UndeclaredTaskError(task.name);
    let data = input;
    if (this.#calls.length || this.#parsed?.task !== task || this.#parsed.input !== input) {
      const parsed = task.inputSchema.safeParse(input);
      if (!parsed.success) throw new ValidationError(`${task.name} input`, formatIssues(parsed.error.issues));
      data = parsed.data;
    }
    task.validateInput(data);
    const placeholder = task.makeRecordOutput(data);
    // A JSON copy: later mutation of the input by the composite does not change what was recorded.
    this.#calls.push({ task, input: toJsonValue(data), placeholder });
    return placeholder;
  }

  #replay(task: UnitTask): unknown {
    const i = this.#replayed;
    const expected = this.#calls[i];
    if (!expected) throw new DeterminismViolationError(`${task.name} has no more outputs to replay: record made ${this.#calls.length} calls`);
    if (expected.task.id !== task.id)
      throw new DeterminismViolationError(`replay call #${i} is ${task.name} (${task.id}) but record call #${i} was ${expected.task.name} (${expected.task.id})`);
    this.#replayed++;
    return this.#outputs![i];
  }

  /** Turns the dispatcher's JSON outputs into typed outputs (a Stream for a streaming last output). */
  setOutputs(result: DispatchResult): void {
    if (this.#phase !== 'recorded' || this.#outputs) throw new RecordReplayError('task outputs already exist for this context; contexts are not reusable');
    if (result.outputs.length !== this.#calls.length)
      throw new DispatchError(`dispatcher returned ${result.outputs.length} outputs for ${this.#calls.length} invocations`);
    this.#outputs = this.#calls.map((call, i) => {
      if (call.placeholder instanceof Stream) {
        if (!result.stream) throw new DispatchError(`${call.task.name} streams, but the dispatcher returned no stream`);
        return new Stream(call.placeholder.chunkSchema, result.stream);
      }
      const out = call.task.outputSchema.safeParse(result.outputs[i]);
      if (!out.success) throw new DispatchError(`output of ${call.task.name} does not match its schema: ${formatIssues(out.error.issues).map((x) => `${x.path}: ${x.message}`).join('; ')}`);
      return out.data;
    });
  }

  replay<T>(fn: () => T): T {
    if (this.#phase === 'replaying') throw new RecordReplayError('cannot replay inside a replay');
    if (this.#phase !== 'recorded') throw new RecordReplayError(`cannot replay a context that is ${this.#phase}`);
    if (this.#calls.length && !this.#outputs) throw new RecordReplayError('cannot replay before the outputs are set');
    this.#outputs ??= [];
    this.#phase = 'replaying';
    try {
      const r = withContext(this, fn);
      if (this.#replayed !== this.#calls.length)
        throw new DeterminismViolationError(`replay made ${this.#replayed} unit-task calls but record made ${this.#calls.length}`);
      return r;
    } finally {
      this.#phase = 'done';
    }
  }
}

/**
 * Task.call(): record -> dispatch -> replay, in a fresh context.
 * call() inside invoke() throws synchronously, so the misuse fails the outer invoke() instead of becoming a
 * rejected promise that invoke() drops.
 */
export function callTask<I, O>(task: Task<I, O>, input: I, options: CallOptions): Promise<O> {
  const outer = activeContext;
  if (outer && (outer.phase === 'recording' || outer.phase === 'replaying'))
    throw new RecordReplayError(`${task.name}.call() inside invoke(): composites call their subtasks' invoke(), not call()`);
  return runCall(task, input, options);
}

async function runCall<I, O>(task: Task<I, O>, input: I, options: CallOptions): Promise<O> {
  if (task.inputSchema) {
    const r = task.inputSchema.safeParse(input);
    if (!r.success) throw new ValidationError(`${task.name} input`, formatIssues(r.error.issues));
    input = r.data;
  }
  const scope = scopeStorage.getStore() ?? {};
  const now = Date.now();
  const deadline = Math.min(
    options.deadline ?? Infinity,
    options.timeoutMs !== undefined ? now + options.timeoutMs : Infinity,
    scope.deadline ?? Infinity,
  );
  const effectiveDeadline = Number.isFinite(deadline) ? deadline : now + DEFAULT_DEADLINE_MS;
  const ctx = new TaskContext(scope.allowedTaskKeys);
  if (task instanceof UnitTask) ctx.markParsed(task, input);
  ctx.record(() => task.invoke(input));
  const graph = ctx.graph();
  if (graph) {
    if (effectiveDeadline <= Date.now()) throw new DispatchError(`deadline passed before ${task.name} was dispatched`, 504, undefined, 'DEADLINE_EXCEEDED');
    const dispatcher = options.dispatcher ?? scope.dispatcher ?? getDefaultDispatcher();
    const common = {
      deadline: effectiveDeadline,
      ...(scope.traceparent ? { traceparent: scope.traceparent } : {}),
      ...(scope.appId ? { appId: scope.appId } : {}),
    };
    // A call's own signal joins the request's (a real AbortSignal, then); without one, a dispatcher in this process
    // takes the request's cut as it is, and the AbortSignal is made only for a dispatcher that needs one.
    const joined = options.signal && scope.signal ? AbortSignal.any([options.signal, scope.signal]) : options.signal;
    const result = dispatcher.dispatchRecorded
      ? await dispatcher.dispatchRecorded(graph, withSignal(common, joined ?? scope.cancel ?? scope.signal))
      : await dispatcher.dispatch(graph.toJSON(), withSignal(common, joined ?? scope.signal));
    ctx.setOutputs(result);
  }
  return ctx.replay(() => task.invoke(input));
}

/** `options` with `signal` when there is one (the options types are exact: no `signal: undefined`). */
function withSignal<O extends object, S>(options: O, signal: S | undefined): O & { signal?: S } {
  return signal ? { ...options, signal } : options;
}
