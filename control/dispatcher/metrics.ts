/**
 * Prometheus metrics of one dispatcher, in a Registry passed in (never the global default, so tests can
 * build several dispatchers in one process). Labels: `app` = the CloudEvent source's app id (or the
 * x-cornserve-app header / "direct" on POST /graph), `task` = the unit task id, `code` = error code.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DispatchObserver } from './dispatch.js';

export class DispatcherMetrics implements DispatchObserver {
  private readonly requests: Counter<'app' | 'route'>;
  private readonly duration: Histogram<'app' | 'outcome'>;
  private readonly inFlight: Gauge<'app'>;
  private readonly errors: Counter<'app' | 'code'>;
  private readonly invocations: Counter<'task'>;
  private readonly invocationsInFlight: Gauge<'task'>;

  constructor(readonly registry: Registry) {
    const registers = [registry];
    this.requests = new Counter({ name: 'cornserve_dispatcher_requests_total', help: 'Task graphs received', labelNames: ['app', 'route'], registers });
    this.duration = new Histogram({
      name: 'cornserve_dispatcher_request_duration_seconds',
      help: 'Task graph latency, from receipt to the end of the reply (streams included)',
      labelNames: ['app', 'outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.inFlight = new Gauge({ name: 'cornserve_dispatcher_in_flight_requests', help: 'Task graphs being dispatched', labelNames: ['app'], registers });
    this.errors = new Counter({ name: 'cornserve_dispatcher_errors_total', help: 'Task graphs that failed, by error code', labelNames: ['app', 'code'], registers });
    this.invocations = new Counter({ name: 'cornserve_dispatcher_invocations_total', help: 'Executor calls made', labelNames: ['task'], registers });
    this.invocationsInFlight = new Gauge({ name: 'cornserve_dispatcher_in_flight_invocations', help: 'Executor calls in flight (streams included)', labelNames: ['task'], registers });
  }

  /** Counts a graph; the returned function ends it with its error code (undefined = success). Call it once. */
  requestStarted(app: string, route: string): (errorCode?: string) => void {
    this.requests.inc({ app, route });
    this.inFlight.inc({ app });
    const stop = this.duration.startTimer({ app });
    let ended = false;
    return (errorCode) => {
      if (ended) return;
      ended = true;
      this.inFlight.dec({ app });
      stop({ outcome: errorCode ? 'error' : 'ok' });
      if (errorCode) this.errors.inc({ app, code: errorCode });
    };
  }

  invocationStarted(taskId: string): () => void {
    this.invocations.inc({ task: taskId });
    this.invocationsInFlight.inc({ task: taskId });
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.invocationsInFlight.dec({ task: taskId });
    };
  }
}
