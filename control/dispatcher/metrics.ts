/**
 * Prometheus metrics of one dispatcher, in a Registry passed in (never the global default, so tests can
 * build several dispatchers in one process). Labels: `app` = the CloudEvent source's app id (or the
 * x-cornserve-app header / "direct" on POST /graph), `task` = the unit task id, `code` = error code.
 *
 * The same names serve wherever dispatch runs: the dispatcher service, and each app function that dispatches in
 * process (`cornserve up`), whose registry the gateway sums into its own GET /metrics (control/gateway/function-metrics.ts).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DispatchObserver } from './dispatch.js';

/** Seconds: from a millisecond executor call to a five-minute deadline. */
const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

type Child<T extends { labels: (...a: never[]) => unknown }> = ReturnType<T['labels']>;

interface AppChildren {
  inFlight: Child<Gauge<'app'>>;
  ok: Child<Histogram<'app' | 'outcome'>>;
  error: Child<Histogram<'app' | 'outcome'>>;
  routes: Map<string, Child<Counter<'app' | 'route'>>>;
}

interface TaskChildren {
  calls: Child<Counter<'task'>>;
  inFlight: Child<Gauge<'task'>>;
  ok: Child<Histogram<'task' | 'outcome'>>;
  error: Child<Histogram<'task' | 'outcome'>>;
}

export class DispatcherMetrics implements DispatchObserver {
  private readonly requests: Counter<'app' | 'route'>;
  private readonly duration: Histogram<'app' | 'outcome'>;
  private readonly inFlight: Gauge<'app'>;
  private readonly errors: Counter<'app' | 'code'>;
  private readonly invocations: Counter<'task'>;
  private readonly invocationsInFlight: Gauge<'task'>;
  private readonly invocationDuration: Histogram<'task' | 'outcome'>;

  constructor(readonly registry: Registry) {
    const registers = [registry];
    this.requests = new Counter({ name: 'cornserve_dispatcher_requests_total', help: 'Task graphs received', labelNames: ['app', 'route'], registers });
    this.duration = new Histogram({
      name: 'cornserve_dispatcher_request_duration_seconds',
      help: 'Task graph latency, from receipt to the end of the reply (streams included)',
      labelNames: ['app', 'outcome'],
      buckets: LATENCY_BUCKETS_S,
      registers,
    });
    this.inFlight = new Gauge({ name: 'cornserve_dispatcher_in_flight_requests', help: 'Task graphs being dispatched', labelNames: ['app'], registers });
    this.errors = new Counter({ name: 'cornserve_dispatcher_errors_total', help: 'Task graphs that failed, by error code', labelNames: ['app', 'code'], registers });
    this.invocations = new Counter({ name: 'cornserve_dispatcher_invocations_total', help: 'Executor calls made', labelNames: ['task'], registers });
    this.invocationsInFlight = new Gauge({ name: 'cornserve_dispatcher_in_flight_invocations', help: 'Executor calls in flight (streams included)', labelNames: ['task'], registers });
    this.invocationDuration = new Histogram({
      name: 'cornserve_dispatcher_invocation_duration_seconds',
      help: 'Executor call latency, from the call to the end of its reply (streams included), by outcome',
      labelNames: ['task', 'outcome'],
      buckets: LATENCY_BUCKETS_S,
      registers,
    });
  }

  /** Label children per app / task, looked up once (prom-client hashes the labels on every labelled call). */
  private readonly appChildren = new Map<string, AppChildren>();
  private readonly taskChildren = new Map<string, TaskChildren>();

  private forApp(app: string): AppChildren {
    let c = this.appChildren.get(app);
    if (!c) {
      c = { inFlight: this.inFlight.labels({ app }), ok: this.duration.labels({ app, outcome: 'ok' }), error: this.duration.labels({ app, outcome: 'error' }), routes: new Map() };
      this.appChildren.set(app, c);
    }
    return c;
  }

  private forTask(task: string): TaskChildren {
    let c = this.taskChildren.get(task);
    if (!c) {
      c = { calls: this.invocations.labels({ task }), inFlight: this.invocationsInFlight.labels({ task }), ok: this.invocationDuration.labels({ task, outcome: 'ok' }), error: this.invocationDuration.labels({ task, outcome: 'error' }) };
      this.taskChildren.set(task, c);
    }
    return c;
  }

  /** Counts a graph; the returned function ends it with its error code (undefined = success). Call it once. */
  requestStarted(app: string, route: string): (errorCode?: string) => void {
    const c = this.forApp(app);
    let requests = c.routes.get(route);
    if (!requests) c.routes.set(route, (requests = this.requests.labels({ app, route })));
    requests.inc();
    c.inFlight.inc();
    const t0 = performance.now();
    let ended = false;
    return (errorCode) => {
      if (ended) return;
      ended = true;
      c.inFlight.dec();
      (errorCode ? c.error : c.ok).observe((performance.now() - t0) / 1000);
      if (errorCode) this.errors.inc({ app, code: errorCode });
    };
  }

  invocationStarted(taskId: string): (error?: unknown) => void {
    const c = this.forTask(taskId);
    c.calls.inc();
    c.inFlight.inc();
    const t0 = performance.now();
    let ended = false;
    return (error) => {
      if (ended) return;
      ended = true;
      c.inFlight.dec();
      (error ? c.error : c.ok).observe((performance.now() - t0) / 1000);
    };
  }
}
