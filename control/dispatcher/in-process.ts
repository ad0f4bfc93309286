/**
 * InProcessDispatcher: the GraphDispatcher of an app function that runs graph execution itself (to save a hop:
 * one HTTP hop fewer per request under `cornserve up --redis`). It is the dispatcher's own code, not a copy:
 * TaskGraph.fromJSON + dispatchGraph over a Router of the shared Store — exactly what POST / of the dispatcher
 * service does — so routing, DataForward wiring, deadlines, cancellation and lease release are the same. A graph
 * recorded by this process's own task.call() comes in as it is (dispatchRecorded: TaskGraph.forDispatch() gives
 * the graph fromJSON(toJSON()) would), with the request's cut as its signal: no JSON round trip, no AbortSignal.
 *
 * What the app function sees is what the CloudEvent path gives it: the dispatcher's errors become DispatchErrors
 * with the status, code and (redacted) message the service's error body would carry, and a stream that breaks
 * ends with a DispatchError (502, the error's code) like the `{"error"}` line of an NDJSON reply.
 *
 * Routing across processes: the Store must be one every leaser shares with atomic counts (a RedisStore:
 * adjustOutstanding is one Lua script), so each app function's leases are visible to every other app function
 * and to the dispatcher service, and least-outstanding stays right. A MemoryStore of this process would only see
 * its own leases; the runtime refuses that combination (functions/runtime/main.ts).
 */
import { DispatchError, TaskGraph, type DispatchOptions, type DispatchResult, type GraphDispatcher, type RecordedDispatchOptions, type TaskGraphJSON } from '../../functions/sdk/index.js';
import { Cut } from '../../lib/cut-signal.js';
import { toErrorBody } from '../../lib/http.js';
import { currentTraceparent } from '../../lib/telemetry.js';
import type { DispatchStore } from '../store/link-protocol.js';
import { dispatchGraph, type DispatchDeps } from './dispatch.js';
import { Router, taskIdOfCached, type RouterOptions } from './routing.js';
import { LoadRecorder } from '../autoscaler/signals.js';
import { LiveServiceRecorder } from './live-service.js';
import type { DispatcherMetrics } from './metrics.js';
import { sleep } from '../../lib/wait.js';

/** How long close() lets the graphs in flight finish before cutting them. */
const DEFAULT_CLOSE_GRACE_MS = 30_000;
/** How long close() waits for cut graphs to settle. */
const CUT_SETTLE_MS = 5_000;

/** The error the CloudEvent path would have produced from the service's reply to `e`. */
function asDispatchError(e: unknown, status?: number): DispatchError {
  if (e instanceof DispatchError) return e;
  const { status: s, body } = toErrorBody(e);
  return new DispatchError(body.error.message, status ?? s, body.error.details, body.error.code);
}

/** The stream's lines, its failure rethrown as the NDJSON error line would be read (readDispatchResponse). */
async function* translated(stream: AsyncIterable<string>, ended: (error?: DispatchError) => void): AsyncGenerator<string> {
  let error: DispatchError | undefined;
  try {
    yield* stream;
  } catch (e) {
    error = asDispatchError(e, 502);
    throw error;
  } finally {
    ended(error);
  }
}

export class InProcessDispatcher implements GraphDispatcher {
  readonly #deps: DispatchDeps;
  /** Autoscaling signals, as the dispatcher service records them (arrivals per task, graph shapes per app). */
  readonly #load: LoadRecorder;
  readonly #liveService: LiveServiceRecorder;
  /** Graphs in flight (a streaming graph until its stream ends): a count, and close()'s wait for it to reach 0. */
  #inFlight = 0;
  #drained: (() => void) | undefined;
  /** Every graph in flight listens to it (and stops at its end): as many listeners as graphs, none left behind. */
  readonly #cut = new Cut();
  #closing: Promise<void> | undefined;

  constructor(
    store: DispatchStore,
    private readonly options: { appId?: string; descriptors?: DispatchDeps['descriptors']; router?: RouterOptions; metrics?: DispatcherMetrics } = {},
  ) {
    this.#load = new LoadRecorder(store);
    this.#liveService = new LiveServiceRecorder(store);
    this.#deps = {
      store,
      router: new Router(store, options.router),
      liveService: this.#liveService,
      ...(options.descriptors ? { descriptors: options.descriptors } : {}),
      ...(options.metrics ? { observer: options.metrics } : {}),
    };
  }

  /** A graph as JSON: validated and given its own objects (wiring mutates them) by fromJSON, as the service does. */
  dispatch(graph: TaskGraphJSON, options: DispatchOptions): Promise<DispatchResult> {
    return this.#run(() => TaskGraph.fromJSON(graph), options);
  }

  /** A graph this process recorded (task.call()): the same graph fromJSON(toJSON()) would give, without the JSON. */
  dispatchRecorded(graph: TaskGraph, options: RecordedDispatchOptions): Promise<DispatchResult> {
    return this.#run(() => graph.forDispatch(), options);
  }

  async #run(prepare: () => TaskGraph, options: RecordedDispatchOptions): Promise<DispatchResult> {
    if (this.#closing) throw new DispatchError('the dispatcher is closing: no new task graphs', 503, undefined, 'SHUTTING_DOWN');
    const appId = options.appId ?? this.options.appId ?? 'unknown';
    this.#inFlight++;
    // Counted as the dispatcher service counts a graph (route `in-process`), ended once with its error code.
    const counted = this.options.metrics?.requestStarted(appId, 'in-process');
    try {
      const parsed = prepare();
      // dispatcher.invoke is the child of the span active here (the function's), as it is of function.dispatch on the CloudEvent path.
      const traceparent = currentTraceparent() ?? options.traceparent;
      this.#load.graph(appId === 'unknown' ? undefined : appId, parsed.invocations.map((inv) => taskIdOfCached(inv.task)));
      const result = await dispatchGraph(
        parsed,
        { deadline: options.deadline, appId, cut: this.#cut, ...(options.signal ? { signal: options.signal } : {}), ...(traceparent ? { traceparent } : {}) },
        this.#deps,
      );
      if (!result.stream) {
        counted?.();
        this.#finished();
        return result;
      }
      return {
        outputs: result.outputs,
        stream: translated(result.stream, (error) => {
          counted?.(error?.code);
          this.#finished();
        }),
      };
    } catch (e) {
      const error = asDispatchError(e);
      counted?.(error.code);
      this.#finished();
      throw error;
    }
  }

  /** One graph is over (called once per graph). */
  #finished(): void {
    if (--this.#inFlight === 0) this.#drained?.();
  }

  /**
   * Drains and releases: new graphs get 503 SHUTTING_DOWN; the ones in flight get `graceMs` to finish, then are cut
   * (their leases are released as on any cancellation); the load signals and live service times not yet written are
   * flushed to the Store. The Store stays the caller's to close (after this). Idempotent.
   */
  close(graceMs = DEFAULT_CLOSE_GRACE_MS): Promise<void> {
    this.#closing ??= (async () => {
      if (this.#inFlight > 0) {
        const all = new Promise<void>((resolve) => (this.#drained = resolve));
        const stopGrace = new AbortController();
        const grace = sleep(graceMs, stopGrace.signal).then(() => 'grace over' as const, () => 'drained' as const);
        const outcome = await Promise.race([all.then(() => 'drained' as const), grace]);
        stopGrace.abort();
        if (outcome === 'grace over') {
          this.#cut.abort(new Error(`the dispatcher closed: the graph did not finish within ${graceMs} ms`));
          // A cut graph ends at once; a stream its caller never reads does not: bounded, its leases are released anyway.
          const stopWait = new AbortController();
          await Promise.race([all, sleep(CUT_SETTLE_MS, stopWait.signal).catch(() => undefined)]);
          stopWait.abort();
        }
      }
      this.#liveService.close();
      await Promise.all([this.#load.close(), this.#liveService.flush()]);
    })();
    return this.#closing;
  }
}
