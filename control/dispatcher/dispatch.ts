/**
 * dispatchGraph: route every invocation -> wire DataForwards -> build every executor request -> send them
 * ALL at once (consumers block on sidecar receives, so there is no ordering) -> read every reply.
 *
 * One failure, the deadline, or the caller going away aborts every sibling through one AbortController,
 * and the caller gets ONE error: the first one (TASK_FAILED naming the task and executor, or
 * DEADLINE_EXCEEDED naming what was still pending). Errors of siblings cancelled because of it are dropped.
 *
 * Every lease (outstanding +1) is released exactly once: after the reply is read, on error, or — for the
 * streaming last invocation — when its stream ends, breaks, is closed by the consumer, or the deadline
 * fires (the deadline timer stays armed during the stream phase, so no request outlives it).
 */
import type { CutSignal, DispatchResult, TaskGraph, UnitTask } from '../../functions/sdk/index.js';
import { toJsonValue } from '../../functions/sdk/index.js';
import { descriptorFor } from '../descriptors/registry.js';
import type { InvocationResult, TaskDescriptor } from '../../lib/descriptor.js';
import type { DispatchStore } from '../store/link-protocol.js';
import { NOOP_SPAN, SpanKind, SpanStatusCode, context, isTraceparent, propagation, trace, tracer, tracingOn, withTraceparent, type Span } from '../../lib/telemetry.js';
import { reportsProducerFailure } from '../../lib/executor-errors.js';
import { DeadlineExceededError, DispatchCancelledError, TaskFailedError, type FailureSite } from '../../lib/dispatch-errors.js';
import { callExecutor, describeFailure } from './executor-client.js';
import type { LiveServiceRecorder } from './live-service.js';
import { routerFor, type Lease, type Router } from './routing.js';
import { guardStream } from './stream-guard.js';
import { wireDataForwards } from '../../policies/wiring.js';
import { deadlineTimer, type DeadlineTimer } from '../../lib/wait.js';
import { Cut } from '../../lib/cut-signal.js';
import { logger } from '../../lib/log.js';

const log = logger('dispatcher');

export interface DispatchGraphOptions {
  /** Epoch ms; the whole graph (stream included) is cancelled when it passes. */
  deadline: number;
  /** Aborts the graph (e.g. the HTTP caller went away); an AbortSignal, or the app function's request cut. */
  signal?: CutSignal;
  /** A second signal that aborts it the same way (an in-process dispatcher closing): no AbortSignal.any per graph. */
  cut?: CutSignal;
  /** The caller's W3C trace context; `dispatcher.invoke` continues it. */
  traceparent?: string;
  /** For span attributes and logs. */
  appId?: string;
}

/** Told when an executor call starts; the returned function is called once when it ends, with its error if it failed (metrics). */
export interface DispatchObserver {
  invocationStarted(taskId: string): (error?: unknown) => void;
}

export interface DispatchDeps {
  store: DispatchStore;
  /** @default descriptorFor (the registry) */
  descriptors?: (task: UnitTask) => TaskDescriptor;
  router?: Router;
  observer?: DispatchObserver;
  /** Live service times per executor (capacity estimates). */
  liveService?: LiveServiceRecorder;
}

/** How long a consumer's "my producer failed" waits for the producer's own error (see GraphRun.fail). */
const PRODUCER_ERROR_GRACE_MS = 500;

/** The executor's error body says its sidecar receive failed because the producer did (`producer_failed`). */
const isProducerFailure = (e: Error): boolean =>
  e instanceof TaskFailedError && reportsProducerFailure(e.executorBody);

export function dispatchGraph(graph: TaskGraph, options: DispatchGraphOptions, deps: DispatchDeps): Promise<DispatchResult> {
  if (!tracingOn()) return new GraphRun(graph, options, deps, NOOP_SPAN).run();
  return withTraceparent(options.traceparent, () => {
    const span = tracer().startSpan('dispatcher.invoke', {
      kind: SpanKind.SERVER,
      attributes: { 'cornserve.invocations': graph.invocations.length, 'cornserve.streaming': graph.isStreaming, ...(options.appId ? { 'cornserve.app': options.appId } : {}) },
    });
    return context.with(trace.setSpan(context.active(), span), () => new GraphRun(graph, options, deps, span).run());
  });
}

/** The unredacted story of a failure (executor id and address: TaskFailedError.internal) stays on the span. */
function recordWhere(span: Span, error: unknown): void {
  const internal = (error as { internal?: unknown } | null)?.internal;
  if (typeof internal === 'string') span.setAttribute('cornserve.error.where', internal);
}

/**
 * The state of one dispatch: its abort, deadline timer, leases and first failure. The abort is a Cut, not an
 * AbortController: every executor call and the routing listen to it, and it is made per graph (lib/cut-signal.ts).
 */
class GraphRun {
  private readonly abort = new Cut();
  private failure: Error | undefined;
  private readonly pending = new Set<number>();
  private sites: FailureSite[] = [];
  /** A refused invocation was sent to another executor already (mayReroute: once per graph). */
  private rerouted = false;
  /** Per invocation: its call's end (endOnce). */
  private readonly ends: (Promise<void> | undefined)[] = [];
  private readonly timer: DeadlineTimer;
  private finished = false;
  /** The caller's signal and the cut, as given. */
  private readonly signals: CutSignal[];
  /** Set in the constructor, not as a field initializer: no name defined on it per graph (see lib/wait.ts SteppedTimer). */
  private readonly onCallerAbort: () => void;

  constructor(
    private readonly graph: TaskGraph,
    private readonly options: DispatchGraphOptions,
    private readonly deps: DispatchDeps,
    private readonly span: Span,
  ) {
    this.timer = deadlineTimer(
      options.deadline,
      () => this.fail(new DeadlineExceededError(options.deadline, [...this.pending].map((i) => this.sites[i]!))),
      { unref: true },
    );
    if (Date.now() >= options.deadline) this.fail(new DeadlineExceededError(options.deadline, []));
    this.onCallerAbort = () => this.fail(new DispatchCancelledError(describeFailure(this.signals.find((s) => s.aborted)?.reason ?? 'the caller went away')));
    this.signals = [options.signal, options.cut].filter((x): x is CutSignal => x !== undefined);
    if (this.signals.some((x) => x.aborted)) this.onCallerAbort();
    else for (const x of this.signals) x.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  private secondary: { error: Error; timer: NodeJS.Timeout } | undefined;

  /**
   * The first failure wins and aborts every call still running — except a consumer that failed only because
   * its producer did (its error has details.producer_failed): that is not the root cause, so the producer's
   * own error gets a short grace to arrive and be reported instead.
   */
  private fail(e: Error): void {
    if (this.failure) return;
    if (isProducerFailure(e) && this.pending.size > 1 && !this.secondary) {
      this.secondary = { error: e, timer: setTimeout(() => this.fail(e), PRODUCER_ERROR_GRACE_MS) };
      this.secondary.timer.unref();
      return;
    }
    if (this.secondary) clearTimeout(this.secondary.timer);
    this.failure = e;
    this.abort.abort(e);
  }

  /** Stops the timer, unhooks the caller's signal, ends the span (once). */
  private finish(error?: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.timer.clear();
    for (const x of this.signals) x.removeEventListener('abort', this.onCallerAbort);
    if (error) {
      this.span.recordException(error as Error);
      recordWhere(this.span, error);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    }
    this.span.end();
  }

  async run(): Promise<DispatchResult> {
    let leases: Lease[] = [];
    try {
      if (this.failure) throw this.failure;
      leases = await this.router().routeGraph(this.graph, { signal: this.abort });
      if (this.failure) throw this.failure;
      this.sites = leases.map((l, i) => ({
        invocation: i,
        task: this.graph.invocations[i]!.task.name,
        taskId: l.taskId,
        executorId: l.route.executorId,
        url: l.route.url,
      }));
      wireDataForwards(this.graph, (i) => leases[i]!.route.sidecarRanks);
      const descriptors = this.graph.invocations.map((inv) => (this.deps.descriptors ?? descriptorFor)(inv.task));
      const requests = this.graph.invocations.map((inv, i) => descriptors[i]!.request(inv.task, inv.input, inv.output));
      const settled = await Promise.allSettled(requests.map((request, i) => this.invoke(i, descriptors[i]!, request, leases[i]!)));
      if (!this.failure && this.secondary) this.fail(this.secondary.error); // no root cause came: report what we have
      if (this.failure) throw this.failure;
      const results = settled.map((s) => (s as PromiseFulfilledResult<InvocationResult>).value);
      return this.result(results);
    } catch (e) {
      const error = this.failure ?? e;
      this.fail(error as Error); // aborts the streaming call if it already answered
      await Promise.all(leases.map((l) => l.release()));
      this.finish(error);
      throw error;
    }
  }

  /** One executor call; on failure, records it as the graph's failure (unless the graph already failed). */
  private async invoke(i: number, descriptor: TaskDescriptor, request: ReturnType<TaskDescriptor['request']>, lease: Lease): Promise<InvocationResult> {
    const inv = this.graph.invocations[i]!;
    const site = this.sites[i]!;
    const ended = this.deps.observer?.invocationStarted(lease.taskId);
    const headers: Record<string, string> = {};
    let span = NOOP_SPAN;
    if (tracingOn()) {
      span = tracer().startSpan(`dispatcher.call ${site.task}`, {
        kind: SpanKind.CLIENT,
        attributes: { 'cornserve.task': site.task, 'cornserve.task_id': site.taskId, 'cornserve.executor': site.executorId, 'url.full': new URL(request.path, site.url).href },
      });
      propagation.inject(trace.setSpan(context.active(), span), headers);
    } else if (isTraceparent(this.options.traceparent)) {
      headers.traceparent = this.options.traceparent; // no span of ours: the caller's context passes on unchanged (W3C)
    }
    this.pending.add(i);
    // Ends the call once, whichever way it ends (a method, not a closure per call: see lib/wait.ts SteppedTimer).
    const done = this.endOnce.bind(this, i, span, lease, ended);
    const started = performance.now();
    try {
      const res = await callExecutor({ site, request, deadline: this.options.deadline, headers, signal: this.abort });
      let result: InvocationResult;
      try {
        result = await descriptor.response(inv.task, inv.output, res);
      } catch (e) {
        if (this.abort.aborted) throw this.abort.reason;
        throw new TaskFailedError(site, `could not read its reply: ${describeFailure(e)}`);
      }
      if (!result.stream || i !== this.graph.invocations.length - 1 || !this.graph.isStreaming) {
        if (result.stream) await res.body?.cancel().catch(() => undefined); // only the last invocation may stream
        else this.deps.liveService?.observe(lease.route.executorId, lease.taskId, performance.now() - started, lease.route.outstanding);
        await done();
        return { output: result.output };
      }
      // The streaming last invocation: its lease and span last as long as its stream (or until the abort).
      this.abort.addEventListener('abort', () => void done(this.failure).then(() => this.finish(this.failure)), { once: true });
      const stream = guardStream(result.stream, {
        onError: (e) => {
          const error = this.abort.aborted ? this.failure! : new TaskFailedError(site, `its stream broke: ${describeFailure(e)}`);
          this.fail(error);
          return error;
        },
        onEnd: async () => {
          await done(this.failure);
          this.finish(this.failure);
        },
        onClose: () => this.fail(new DispatchCancelledError('the stream was closed before its end')),
        failed: () => this.failure,
      });
      return { output: result.output, stream };
    } catch (e) {
      if (e instanceof TaskFailedError && e.notDelivered && this.mayReroute()) {
        await done(e);
        return this.reroute(i, descriptor, request, lease);
      }
      const error = this.abort.aborted ? this.failure! : e instanceof TaskFailedError ? e : new TaskFailedError(site, describeFailure(e));
      this.fail(error);
      await done(error);
      throw error;
    }
  }

  private router(): Router {
    return this.deps.router ?? routerFor(this.deps.store);
  }

  /**
   * A graph of one invocation whose executor refused the connection may be sent once more, to another executor: the
   * request never left (so it cannot run twice) and nothing else of the graph started (no DataForward was wired to
   * the refused executor's sidecar ranks). That is an executor that died, e.g. killed, before its task manager took
   * it out of the routes: its in-flight requests are lost, but the ones sent in that window need not be.
   */
  private mayReroute(): boolean {
    return this.graph.invocations.length === 1 && !this.rerouted && !this.abort.aborted;
  }

  /** Leases another executor of the task than the one that refused (or fails with NO_EXECUTOR: 503, Retry-After) and calls it. */
  private async reroute(i: number, descriptor: TaskDescriptor, request: ReturnType<TaskDescriptor['request']>, refused: Lease): Promise<InvocationResult> {
    this.rerouted = true;
    this.ends[i] = undefined; // the refused call ended; the next one ends on its own
    let lease: Lease;
    try {
      [lease] = (await this.router().routeGraph(this.graph, { signal: this.abort, exclude: new Set([refused.route.executorId]) })) as [Lease];
    } catch (e) {
      const error = this.abort.aborted ? this.failure! : (e as Error);
      this.fail(error);
      throw error;
    }
    log.info({ task: this.sites[i]!.task, refused: refused.route.executorId, to: lease.route.executorId }, 'executor refused the connection: invocation sent to another one');
    this.sites[i] = { ...this.sites[i]!, executorId: lease.route.executorId, url: lease.route.url };
    return this.invoke(i, descriptor, request, lease);
  }

  /** endCall, once per invocation: later calls get the first one's promise. */
  private endOnce(i: number, span: Span, lease: Lease, ended: ((error?: unknown) => void) | undefined, error?: unknown): Promise<void> {
    return (this.ends[i] ??= this.endCall(i, span, lease, ended, error));
  }

  /** Ends one executor call: its span, its observer entry, its lease. */
  private endCall(i: number, span: Span, lease: Lease, ended: ((error?: unknown) => void) | undefined, error?: unknown): Promise<void> {
    this.pending.delete(i);
    if (error) {
      span.recordException(error as Error);
      recordWhere(span, error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    }
    span.end();
    ended?.(error);
    return lease.release(); // not an async function: one promise fewer per call
  }

  private result(results: InvocationResult[]): DispatchResult {
    const outputs = results.map((r) => (r.stream ? {} : toJsonValue(r.output)));
    const stream = results[results.length - 1]!.stream;
    if (!stream) this.finish(); // every lease was released when its reply was read
    return stream ? { outputs, stream } : { outputs };
  }
}
