/**
 * The gateway's Prometheus metrics, in a Registry passed in (never the global default, so tests can
 * build several gateways in one process):
 *   cornserve_gateway_requests_total{app,status}            invocations by app and HTTP status
 *   cornserve_gateway_request_duration_seconds{app}         invocation latency (histogram)
 *   cornserve_gateway_in_flight_requests{app}               invocations being served
 *   cornserve_gateway_errors_total{code}                    error replies by error code (all routes)
 *   cornserve_gateway_http_requests_total{route,method,status}
 *   cornserve_apps{state}                                   registered apps by state (at scrape time)
 *   cornserve_task_executors{task_id,state}                 executors per unit task (at scrape time)
 *   cornserve_store_reachable                               1 when the store answered this scrape's reads, else 0
 *
 * The gauges read at scrape time leave their series out while the store cannot be read: a scrape during a store
 * outage answers with every in-memory series and `cornserve_store_reachable 0`, rather than failing whole.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Store } from '../../lib/store.js';
import { LoadRecorder } from '../autoscaler/signals.js';

/**
 * What the hot path counts in plain numbers (per app: in flight now; finished invocations and HTTP requests by label
 * set, and invocation durations, not yet handed over), which the metrics' collect() hands to prom-client when
 * /metrics is scraped: every prom-client update converts, validates and hashes its labels, and an invocation made
 * five of them — a measurable share of the gateway's CPU per invocation, paid with cold caches between the
 * invocation's other work; handed over in one loop they cost little. Durations are also handed over every
 * DURATIONS_HELD of them, so an unscraped gateway holds no more than that per app.
 */
const DURATIONS_HELD = 1024;

/** What the scrape-time gauges read from the store. */
interface StoreSnapshot {
  apps: Awaited<ReturnType<Store['listApps']>>;
  tasks: Awaited<ReturnType<Store['listTasks']>>;
  executors: Awaited<ReturnType<Store['listExecutors']>>;
}

interface Pending<C> {
  child: C;
  /** Counted since the last scrape. */
  n: number;
}

export class GatewayMetrics {
  readonly requests: Counter<'app' | 'status'>;
  readonly duration: Histogram<'app'>;
  readonly inFlight: Gauge<'app'>;
  readonly errors: Counter<'code'>;
  readonly http: Counter<'route' | 'method' | 'status'>;
  /** App request rates for the autoscaler (Store counters every gateway replica adds to). */
  readonly load: LoadRecorder;

  constructor(readonly registry: Registry, store: Store) {
    this.load = new LoadRecorder(store);
    const registers = [registry];
    // One set of store reads per scrape, shared by the gauges below: prom-client starts their collects together,
    // so they join the reads in flight; the next scrape reads afresh.
    let inFlight: Promise<StoreSnapshot | undefined> | undefined;
    const read = (): Promise<StoreSnapshot | undefined> =>
      (inFlight ??= Promise.all([store.listApps(), store.listTasks(), store.listExecutors()])
        .then(([apps, tasks, executors]) => ({ apps, tasks, executors }), () => undefined)
        .finally(() => { inFlight = undefined; }));
    new Gauge({
      name: 'cornserve_store_reachable',
      help: 'Whether the store answered this scrape\'s reads (1) or not (0)',
      registers,
      async collect() {
        this.set((await read()) ? 1 : 0);
      },
    });
    const byApp = () => this.byApp;
    const httpChildren = () => this.httpChildren;
    this.requests = new Counter({
      name: 'cornserve_gateway_requests_total',
      help: 'App invocations by app and HTTP status',
      labelNames: ['app', 'status'],
      registers,
      collect() {
        for (const c of byApp().values()) for (const p of c.status.values()) handOver(p);
      },
    });
    this.duration = new Histogram({
      name: 'cornserve_gateway_request_duration_seconds',
      help: 'App invocation latency through the gateway (to the end of the reply)',
      labelNames: ['app'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
      collect() {
        for (const c of byApp().values()) observeHeld(c);
      },
    });
    this.inFlight = new Gauge({
      name: 'cornserve_gateway_in_flight_requests',
      help: 'App invocations in flight',
      labelNames: ['app'],
      registers,
      collect() {
        for (const [app, c] of byApp()) this.set({ app }, c.inFlight);
      },
    });
    this.errors = new Counter({ name: 'cornserve_gateway_errors_total', help: 'Error replies by error code', labelNames: ['code'], registers });
    this.http = new Counter({
      name: 'cornserve_gateway_http_requests_total',
      help: 'HTTP requests by route, method and status',
      labelNames: ['route', 'method', 'status'],
      registers,
      collect() {
        for (const p of httpChildren().values()) handOver(p);
      },
    });
    new Gauge({
      name: 'cornserve_apps',
      help: 'Registered apps by state',
      labelNames: ['state'],
      registers,
      async collect() {
        this.reset();
        const apps = (await read())?.apps;
        if (!apps) return;
        for (const state of ['ready', 'not ready'] as const) this.set({ state }, apps.filter((a) => a.state === state).length);
      },
    });
    new Gauge({
      name: 'cornserve_task_executors',
      help: 'Executors per unit task and state',
      labelNames: ['task_id', 'state'],
      registers,
      async collect() {
        this.reset();
        const snap = await read();
        if (!snap) return;
        const { tasks, executors } = snap;
        for (const t of tasks) this.set({ task_id: t.taskId, state: 'ready' }, 0);
        const counts = new Map<string, { taskId: string; state: string; n: number }>();
        for (const e of executors) {
          const key = `${e.taskId}\u0000${e.state}`;
          const c = counts.get(key) ?? { taskId: e.taskId, state: e.state, n: 0 };
          c.n++;
          counts.set(key, c);
        }
        for (const c of counts.values()) this.set({ task_id: c.taskId, state: c.state }, c.n);
      },
    });
  }

  /** Per app: invocations in flight, durations not yet observed, and finished invocations by status (label children looked up once). */
  private readonly byApp = new Map<string, AppCounts>();

  private readonly httpChildren = new Map<string, Pending<ReturnType<Counter<'route' | 'method' | 'status'>['labels']>>>();

  /** Counts one HTTP request in cornserve_gateway_http_requests_total (handed over at the next scrape). */
  httpRequest(route: string, method: string, status: number): void {
    const key = `${route} ${method} ${status}`;
    let p = this.httpChildren.get(key);
    if (!p) this.httpChildren.set(key, (p = { child: this.http.labels({ route, method, status: String(status) }), n: 0 }));
    p.n++;
  }

  /** Call when an invocation starts (with the app's id: it counts toward the app's request rate); the returned function records its end. */
  invocationStarted(app: string, appId?: string): (status: number) => void {
    if (appId) this.load.request(appId);
    let c = this.byApp.get(app);
    if (!c) this.byApp.set(app, (c = { inFlight: 0, duration: this.duration.labels({ app }), durations: [], status: new Map() }));
    const counts = c;
    counts.inFlight++;
    const t0 = performance.now();
    return (status) => {
      counts.inFlight--;
      if (counts.durations.push((performance.now() - t0) / 1000) >= DURATIONS_HELD) observeHeld(counts);
      let requests = counts.status.get(status);
      if (!requests) counts.status.set(status, (requests = { child: this.requests.labels({ app, status: String(status) }), n: 0 }));
      requests.n++;
    };
  }
}

interface AppCounts {
  inFlight: number;
  duration: ReturnType<Histogram<'app'>['labels']>;
  /** Seconds, not yet observed. */
  durations: number[];
  status: Map<number, Pending<ReturnType<Counter<'app' | 'status'>['labels']>>>;
}

function observeHeld(c: AppCounts): void {
  for (const seconds of c.durations) c.duration.observe(seconds);
  c.durations.length = 0;
}

/** Adds what was counted since the last scrape to the prom-client child. */
function handOver(p: Pending<{ inc(value?: number): void }>): void {
  if (p.n === 0) return;
  p.child.inc(p.n);
  p.n = 0;
}
