/**
 * The dispatcher's HTTP server (stateless: every piece of state is in the Store; replicate freely).
 *
 *  POST /         a task-graph CloudEvent in binary mode (from app functions; see cloudevent.ts)
 *  POST /graph    the plain task graph JSON, deadline in `x-cornserve-deadline`, trace in `traceparent`,
 *                 optional `x-cornserve-app` label (the gateway's POST /tasks/invoke forwards here)
 *  GET  /health   {status: "ok"}
 *  GET  /metrics  Prometheus text
 *
 * Replies: the outputs JSON array, or for a streaming graph `application/x-ndjson` (see reply.ts);
 * errors `{error: {code, message, details?}}` with the statuses in errors.ts.
 */
import { createServer } from 'node:http';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { Registry } from 'prom-client';
import { DEADLINE_HEADER, TaskGraph } from '../../functions/sdk/index.js';
import { errorHandler, parseByteSize, readWhole, route, toErrorBody } from '../../lib/http.js';
import { logger } from '../../lib/log.js';
import { listenUnix } from '../../lib/unix-url.js';
import { closeServer, listen, type ListeningServer } from '../../lib/listen.js';
import type { Store } from '../../lib/store.js';
import { graphDeadline, parseInvokeEvent, type GraphRequest } from './cloudevent.js';
import { dispatchGraph, type DispatchDeps } from './dispatch.js';
import { DispatcherMetrics } from './metrics.js';
import { LiveServiceRecorder } from './live-service.js';
import { writeDispatchResult } from './reply.js';
import { Router, taskIdOfCached, type RouterOptions } from './routing.js';
import { LoadRecorder } from '../autoscaler/signals.js';
import { hopBodyLimitBytes } from '../../lib/body-limit.js';

const log = logger('dispatcher');

/** Header naming the app on POST /graph (metrics label). */
export const APP_HEADER = 'x-cornserve-app';

export interface DispatcherOptions {
  store: Store;
  /** Where metrics go. @default a new Registry (read it back from GET /metrics) */
  registry?: Registry;
  /** @default descriptorFor */
  descriptors?: DispatchDeps['descriptors'];
  /** Where load signals go (arrivals per task, graph shapes per app). @default a LoadRecorder on `store` */
  load?: LoadRecorder;
  /** Largest accepted graph ('32mb' or bytes; inputs may carry data URLs). @default hopBodyLimitBytes() (lib/body-limit.ts) */
  bodyLimit?: string | number;
  /** How its Router caches routes ('one-ready' when app functions lease the same executors over the store link). */
  router?: RouterOptions;
}

export function buildDispatcher(options: DispatcherOptions): express.Express {
  const registry = options.registry ?? new Registry();
  const metrics = new DispatcherMetrics(registry);
  const deps: DispatchDeps = {
    store: options.store,
    router: new Router(options.store, options.router),
    observer: metrics,
    liveService: new LiveServiceRecorder(options.store),
    ...(options.descriptors ? { descriptors: options.descriptors } : {}),
  };
  const limit = options.bodyLimit ?? hopBodyLimitBytes();
  const load = options.load ?? new LoadRecorder(options.store);

  /** Validates, dispatches and replies; every request is counted once with its outcome. */
  const serve = async (req: Request, res: Response, routeName: string, parse: () => GraphRequest) => {
    let app = 'unknown';
    let end: ((code?: string) => void) | undefined;
    try {
      const request = parse();
      app = request.app;
      end = metrics.requestStarted(app, routeName);
      const graph = TaskGraph.fromJSON(request.graph);
      // Autoscaling signals: every invocation arrives at its task; app ids (CloudEvent source) give each app's graph shape.
      load.graph(routeName === 'cloudevent' ? app : undefined, graph.invocations.map((inv) => taskIdOfCached(inv.task)));
      const caller = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) caller.abort(new Error('the client closed the connection'));
      });
      const result = await dispatchGraph(
        graph,
        { deadline: request.deadline, signal: caller.signal, appId: app, ...(request.traceparent ? { traceparent: request.traceparent } : {}) },
        deps,
      );
      const streamError = await writeDispatchResult(res, result);
      if (streamError) log.warn({ app, code: streamError.code, where: streamError.internal }, streamError.message);
      end(streamError?.code);
    } catch (e) {
      const { status, body } = toErrorBody(e);
      (end ?? metrics.requestStarted(app, routeName))(body.error.code);
      // The client's body names the task only; where it ran (executor id, address) is logged here. 5xx: errorHandler logs the error whole.
      const internal = (e as { internal?: unknown }).internal;
      if (status < 500 && typeof internal === 'string') log.info({ app, code: body.error.code, where: internal }, body.error.message);
      throw e;
    }
  };

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false); // replies are POST results: hashing each body for an ETag is pure per-request cost
  const maxBody = parseByteSize(limit);
  const cloudevent: RequestHandler = (req, res, next) => {
    readWhole(req, maxBody).then((body) => serve(req, res, 'cloudevent', () => parseInvokeEvent(req.headers, body.toString('utf8')))).catch(next);
  };
  // The CloudEvent route (every app-function call) ahead of the router; `POST /?query` takes the same route below.
  app.use((req, res, next) => (req.method === 'POST' && req.url === '/' ? cloudevent(req, res, next) : next()));
  app.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/metrics', route(async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  }));
  app.post('/', cloudevent);
  app.post('/graph', express.json({ limit }), route((req, res) =>
    serve(req, res, 'graph', () => ({
      graph: req.body,
      deadline: graphDeadline(req.get(DEADLINE_HEADER), `the ${DEADLINE_HEADER} header`),
      app: req.get(APP_HEADER) ?? 'direct',
      ...(req.get('traceparent') ? { traceparent: req.get('traceparent')! } : {}),
    })),
  ));
  app.use(errorHandler(log));
  return app;
}

export interface RunningDispatcher extends ListeningServer {
  /** `http+unix://...` when started with `socketPath` (for callers on this machine), else undefined. */
  localUrl?: string;
}

/**
 * Builds and listens (port 0 = any free port; with `socketPath`, on that unix socket as well);
 * `close(graceMs)` stops accepting, gives in-flight requests `graceMs`, then closes every connection
 * (and removes the socket file). The Store stays the caller's to close.
 */
export async function startDispatcher(options: DispatcherOptions & { port?: number; host?: string; socketPath?: string }): Promise<RunningDispatcher> {
  const app = buildDispatcher(options);
  const tcp = await listen(app, options.port ?? 0, options.host ?? '127.0.0.1');
  if (!options.socketPath) return tcp;
  const local = createServer(app);
  local.keepAliveTimeout = tcp.server.keepAliveTimeout;
  let localUrl: string;
  try {
    localUrl = await listenUnix(local, options.socketPath);
  } catch (e) {
    await tcp.close(0);
    throw e;
  }
  return { ...tcp, localUrl, close: async (graceMs?: number) => void (await Promise.all([tcp.close(graceMs), closeServer(local, graceMs)])) };
}
