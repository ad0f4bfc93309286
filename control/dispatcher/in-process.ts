/**
 * InProcessDispatcher: the GraphDispatcher of an app function that runs graph execution itself (issue 17:
 * one HTTP hop fewer per request under `cornserve up --redis`). It is the dispatcher's own code, not a copy:
 * TaskGraph.fromJSON + dispatchGraph over a Router of the shared Store — exactly what POST / of the dispatcher
 * service does — so routing, DataForward wiring, deadlines, cancellation and lease release are the same.
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
import { DispatchError, TaskGraph, type DispatchOptions, type DispatchResult, type GraphDispatcher, type TaskGraphJSON } from '../../functions/sdk/index.js';
import { toErrorBody } from '../../lib/http.js';
import type { Store } from '../store/types.js';
import { dispatchGraph, type DispatchDeps } from './dispatch.js';
import { Router, taskIdOfCached } from './routing.js';
import { LoadRecorder } from '../autoscaler/signals.js';
import { LiveServiceRecorder } from './live-service.js';

/** The error the CloudEvent path would have produced from the service's reply to `e`. */
function asDispatchError(e: unknown, status?: number): DispatchError {
  if (e instanceof DispatchError) return e;
  const { status: s, body } = toErrorBody(e);
  return new DispatchError(body.error.message, status ?? s, body.error.details, body.error.code);
}

/** The stream's lines, its failure rethrown as the NDJSON error line would be read (readDispatchResponse). */
async function* translated(stream: AsyncIterable<string>): AsyncGenerator<string> {
  try {
    yield* stream;
  } catch (e) {
    throw asDispatchError(e, 502);
  }
}

export class InProcessDispatcher implements GraphDispatcher {
  readonly #deps: DispatchDeps;
  /** Autoscaling signals, as the dispatcher service records them (arrivals per task, graph shapes per app). */
  readonly #load: LoadRecorder;

  constructor(
    store: Store,
    private readonly options: { appId?: string; descriptors?: DispatchDeps['descriptors'] } = {},
  ) {
    this.#load = new LoadRecorder(store);
    this.#deps = { store, router: new Router(store), liveService: new LiveServiceRecorder(store), ...(options.descriptors ? { descriptors: options.descriptors } : {}) };
  }

  async dispatch(graph: TaskGraphJSON, options: DispatchOptions): Promise<DispatchResult> {
    const appId = options.appId ?? this.options.appId ?? 'unknown';
    try {
      // fromJSON as the service does: the graph is validated and gets its own objects (wiring mutates them).
      const parsed = TaskGraph.fromJSON(graph);
      this.#load.graph(appId === 'unknown' ? undefined : appId, parsed.invocations.map((inv) => taskIdOfCached(inv.task)));
      const result = await dispatchGraph(
        parsed,
        { deadline: options.deadline, appId, ...(options.signal ? { signal: options.signal } : {}), ...(options.traceparent ? { traceparent: options.traceparent } : {}) },
        this.#deps,
      );
      return result.stream ? { outputs: result.outputs, stream: translated(result.stream) } : result;
    } catch (e) {
      throw asDispatchError(e);
    }
  }
}
