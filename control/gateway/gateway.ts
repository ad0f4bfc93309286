/**
 * buildGateway(deps) -> the gateway's request listener (lib/listen.ts serves it): the hot invoke route first, then the express app. One router per concern:
 * apps (register/unregister/list/invoke), tasks (list/scale/invoke), health + metrics; admin auth on the
 * mutating routes; JSON bodies capped (413 beyond); every error is `{error: {code, message, details?}}`.
 */
import type { Agent, IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express, { type ErrorRequestHandler } from 'express';
import type { Registry } from 'prom-client';
import { notFound, sendError, toErrorBody } from '../../lib/http.js';
import { logger, type Logger } from '../../lib/log.js';
import { traceRequests } from '../../lib/telemetry.js';
import type { ResourceManagerApi } from '../resources/types.js';
import type { AppFunctions } from './app-functions.js';
import type { AppManager } from './app-manager.js';
import { requireAdmin } from './auth.js';
import { ShuttingDownError } from './errors.js';
import type { GatewayMetrics } from './metrics.js';
import { keepAliveAgent } from './proxy.js';
import type { FunctionLinks } from './function-link.js';
import { appRoutes, hotInvoke, jsonBody, rawBody } from './routes/apps.js';
import { healthRoutes } from './routes/health.js';
import { openaiRoutes } from './routes/openai.js';
import { taskRoutes } from './routes/tasks.js';
import { planRoutes } from './routes/plans.js';
import { usageRoutes } from './routes/usage.js';
import { profileRoutes } from './routes/profiles.js';
import { registryRoutes } from './routes/registry.js';
import type { TaskRegistry } from '../registry/task-registry.js';
import type { StoreHealth } from '../store/watch.js';
import { bodyLimitBytes } from '../../lib/body-limit.js';

export interface GatewayDeps {
  apps: AppManager;
  functions: AppFunctions;
  resources: ResourceManagerApi;
  /** Base URL of the dispatcher (POST /tasks/invoke goes to its POST /graph). */
  dispatcherUrl: string;
  adminToken: string;
  metrics: GatewayMetrics;
  /** Further registries GET /metrics shows (e.g. an in-process dispatcher's). */
  extraRegistries?: Registry[];
  /** The node sidecars' states GET /health reports (`up`); absent when the gateway runs none. */
  sidecars?: () => Record<string, 'up' | 'down'>;
  /** Largest accepted JSON body: the platform's limit (lib/body-limit.ts). @default $CORNSERVE_BODY_LIMIT_BYTES, else 32 MiB */
  bodyLimitBytes?: number;
  /** How long an invocation waits for a restarting app function. @default 30 s */
  restartWaitMs?: number;
  agent?: Agent;
  /** Call app functions over these framed links (`up`); without, over HTTP (Knative Services, the gateway role). */
  links?: FunctionLinks;
  log?: Logger;
  /** User-defined unit tasks (POST /tasks/register); without it those routes are absent. */
  registry?: TaskRegistry;
  /** The store's state for GET /health (control/store/watch.ts); without it /health does not report the store. */
  storeHealth?: () => StoreHealth;
}

/** The gateway's request listener: the hot invoke route (routes/apps.ts hotInvoke), else the express app. */
export function buildGateway(deps: GatewayDeps): RequestListener {
  const log = deps.log ?? logger('gateway');
  const agent = deps.agent ?? keepAliveAgent();
  const admin = requireAdmin(deps.adminToken);
  const limit = deps.bodyLimitBytes ?? bodyLimitBytes();
  const json = jsonBody(limit);
  const raw = rawBody(limit);
  const { metrics } = deps;

  const links = deps.links ? { links: deps.links } : {};
  const appDeps = { apps: deps.apps, functions: deps.functions, metrics, agent, ...links, admin, json, raw, ...(deps.restartWaitMs ? { restartWaitMs: deps.restartWaitMs } : {}) };

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // Once shutdown began (AppManager.shutdown drains), every new request is refused; `connection: close` sends
  // keep-alive clients elsewhere. Answered here, not by the error handler: a refusal is expected, not an error to log.
  app.use((_req, res, next) => {
    if (!deps.apps.stopping) return next();
    const { status, body } = toErrorBody(new ShuttingDownError());
    metrics.errors.inc({ code: body.error.code });
    res.status(status).set('connection', 'close').json(body);
  });
  app.use(traceRequests('gateway'));
  app.use((req, res, next) => {
    res.once('finish', () => metrics.httpRequest(req.route?.path ? String(req.route.path) : 'unmatched', req.method, res.statusCode));
    next();
  });
  app.use(appRoutes(appDeps));
  app.use(taskRoutes({ resources: deps.resources, dispatcherUrl: deps.dispatcherUrl, metrics, agent, admin, json, admit: () => deps.apps.admitTaskGraph() }));
  app.use(planRoutes({ resources: deps.resources, apps: deps.apps, admin, json }));
  app.use(usageRoutes({ resources: deps.resources, json }));
  app.use(profileRoutes({ resources: deps.resources, admin, json }));
  if (deps.registry) app.use(registryRoutes({ registry: deps.registry, admin, json }));
  app.use(healthRoutes(metrics, deps.extraRegistries, { ...(deps.sidecars ? { sidecars: deps.sidecars } : {}), ...(deps.storeHealth ? { storeHealth: deps.storeHealth } : {}), functionUrls: () => deps.functions.readyUrls() }));
  app.use(openaiRoutes({ apps: deps.apps, functions: deps.functions, metrics, agent, ...links, json, log, ...(deps.restartWaitMs ? { restartWaitMs: deps.restartWaitMs } : {}) }));
  app.use((req, _res, next) => next(notFound(`route ${req.method} ${req.path}`)));
  // Every error reply, from the express routes and from the hot route: counted by code, then answered (lib/http.ts).
  const answerError = (err: unknown, req: IncomingMessage, res: ServerResponse) => {
    metrics.errors.inc({ code: toErrorBody(err).body.error.code });
    sendError(log, req, res, err);
  };
  const countErrors: ErrorRequestHandler = (err, req, res, _next) => answerError(err, req, res);
  app.use(countErrors);
  const hot = hotInvoke(appDeps, limit, {
    onRequest: (res, route) => res.once('finish', () => metrics.httpRequest(route, 'POST', res.statusCode)),
    onError: answerError,
  });
  return (req, res) => {
    if (!hot(req, res)) app(req, res);
  };
}
