/**
 * The resource manager's HTTP API, for a gateway running in another process (ResourceManagerClient is the
 * other end). It exposes ResourceManagerApi and the app-function part of the Platform, so the gateway needs
 * no cluster rights of its own:
 *
 *   GET    /health                      {status: 'ok', platform, instance}
 *   POST   /tasks/deploy   {tasks}      application/x-ndjson: {progress} lines, then {taskIds} or {error}
 *   POST   /tasks/release  {taskIds}    204
 *   POST   /tasks/scale    {taskId, delta} -> TaskStatus
 *   POST   /tasks/autoscale {taskId, policy, source} -> TaskStatus
 *   POST   /plans/apply    {targets: PlanTarget[]} -> TaskStatus[] (all or nothing; 422 INVALID_PLAN naming the field)
 *   GET    /tasks                       -> TaskStatus[]
 *   POST   /app-functions  AppFunctionSpec -> AppFunctionInstance (after the platform has it running)
 *   DELETE /app-functions/:appId        204
 *   GET    /events                      application/x-ndjson: {instance} first, then app-function PlatformEvents
 *
 * Tasks travel as their Store records (newTaskRecord) and are rebuilt with taskFromRecord. Errors are
 * `{error: {code, message, details?}}` with the CornserveError's status (409 INSUFFICIENT_DEVICES, 404
 * TASK_NOT_FOUND, ...); a deploy's error comes as its stream's last line, with `status`.
 */
import { randomUUID } from 'node:crypto';
import type { Registry } from 'prom-client';
import express from 'express';
import { z } from 'zod';
import { errorHandler, notFound, parseOr422, route, toErrorBody } from '../../lib/http.js';
import { logger, type Logger } from '../../lib/log.js';
import type { AppFunctionPlatform, Platform } from '../../lib/platform.js';
import { taskFromRecord } from './task-records.js';
import type { ResourceManagerApi } from './types.js';
import type { LaunchSpec } from '../../lib/descriptor.js';
import type { UnitTaskRecord } from '../../lib/store.js';

export interface ResourceServerDeps {
  resources: ResourceManagerApi;
  platform: AppFunctionPlatform & Pick<Platform, 'kind'>;
  /** Replaces the launch spec the gateway sends for app functions (a cluster runs the runtime image, not a file). */
  appLaunch?: LaunchSpec;
  /** @default 32 MiB */
  bodyLimitBytes?: number;
  log?: Logger;
  /** Served at GET /metrics (Prometheus text): the autoscaler's gauges per task in the resource-manager role. */
  registry?: Registry;
}

const taskWire = z.object({
  taskId: z.string().min(1),
  key: z.string(),
  taskClass: z.string().min(1),
  task: z.record(z.string(), z.unknown()),
});
const deployBody = z.object({ tasks: z.array(taskWire) });
const releaseBody = z.object({ taskIds: z.array(z.string().min(1)) });
const scaleBody = z.object({ taskId: z.string().min(1), delta: z.number().int() });
const profileBody = z.object({ taskId: z.string().min(1) });
const policySchema = z.union([
  z.object({ min: z.number(), max: z.number(), target: z.number() }),
  z.object({ min: z.number(), max: z.number(), sloMs: z.number() }),
]);
const autoscaleBody = z.object({ taskId: z.string().min(1), policy: policySchema, source: z.enum(['admin', 'app']) });
const planTarget = z.object({
  taskId: z.string().min(1),
  field: z.string(),
  executors: z.number().int(),
  devicesPerExecutor: z.number().int().positive(),
  placement: z.array(z.object({ node: z.number().int().nonnegative(), executors: z.number().int().positive(), field: z.string() })),
});
const applyPlanBody = z.object({ targets: z.array(planTarget) });
const launchSchema = z.looseObject({ kind: z.string(), entry: z.string(), image: z.string(), args: z.array(z.string()), devicesPerExecutor: z.number() });
const appFunctionBody = z.object({
  appId: z.string().min(1),
  name: z.string().min(1),
  source: z.string(),
  launch: launchSchema,
  env: z.record(z.string(), z.string()).optional(),
});

const NDJSON = 'application/x-ndjson';

export function buildResourceServer(deps: ResourceServerDeps): express.Express {
  const log = deps.log ?? logger('resource-server');
  const { resources, platform } = deps;
  /** Changes with every process: a client that sees another instance knows its app functions may be gone. */
  const instance = randomUUID();
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: deps.bodyLimitBytes ?? 32 * 1024 * 1024 }));

  app.get('/health', (_req, res) => void res.json({ status: 'ok', platform: platform.kind, instance }));
  const registry = deps.registry;
  if (registry) app.get('/metrics', route(async (_req, res) => void res.type(registry.contentType).send(await registry.metrics())));

  app.post('/tasks/deploy', route(async (req, res) => {
    const { tasks } = parseOr422(deployBody, req.body, 'deploy request');
    const unitTasks = tasks.map((t) => taskFromRecord({ ...t, state: 'deploying', devices: [], usage: 0, updatedAt: 0 } as UnitTaskRecord));
    res.status(200).type(NDJSON);
    res.flushHeaders();
    const line = (v: unknown) => res.write(`${JSON.stringify(v)}\n`);
    try {
      const taskIds = await resources.deploy(unitTasks, (progress) => line({ progress }));
      line({ taskIds });
    } catch (e) {
      const { status, body } = toErrorBody(e);
      if (status >= 500) log.error({ err: e }, 'deploy failed');
      line({ ...body, status });
    }
    res.end();
  }));

  app.post('/tasks/release', route(async (req, res) => {
    await resources.release(parseOr422(releaseBody, req.body, 'release request').taskIds);
    res.status(204).end();
  }));

  app.post('/tasks/scale', route(async (req, res) => {
    const { taskId, delta } = parseOr422(scaleBody, req.body, 'scale request');
    res.json(await resources.scale(taskId, delta));
  }));

  app.post('/tasks/profile', route(async (req, res) => {
    const { taskId } = parseOr422(profileBody, req.body, 'profile request');
    res.json(await resources.profile(taskId));
  }));

  app.get('/profiles', route(async (_req, res) => void res.json(await resources.listProfiles())));

  app.post('/tasks/autoscale', route(async (req, res) => {
    const { taskId, policy, source } = parseOr422(autoscaleBody, req.body, 'autoscale request');
    res.json(await resources.setAutoscale(taskId, policy, source));
  }));

  app.post('/plans/apply', route(async (req, res) => {
    const { targets } = parseOr422(applyPlanBody, req.body, 'plan');
    res.json(await resources.applyPlan(targets));
  }));

  app.get('/tasks', route(async (_req, res) => void res.json(await resources.listTasks())));

  app.post('/app-functions', route(async (req, res) => {
    const spec = parseOr422(appFunctionBody, req.body, 'app function');
    // With appLaunch (a cluster) the source travels in spec.source; the gateway's local source path means nothing there.
    const env = deps.appLaunch && spec.env ? Object.fromEntries(Object.entries(spec.env).filter(([k]) => k !== 'CORNSERVE_APP_SOURCE')) : spec.env;
    const instanceOf = await platform.deployAppFunction({ ...spec, ...(env ? { env } : {}), launch: deps.appLaunch ?? (spec.launch as LaunchSpec) });
    res.json(instanceOf);
  }));

  app.delete('/app-functions/:appId', route(async (req, res) => {
    await platform.deleteAppFunction(String(req.params.appId));
    res.status(204).end();
  }));

  app.get('/events', (req, res) => {
    res.status(200).type(NDJSON);
    res.write(`${JSON.stringify({ instance })}\n`);
    const unsubscribe = platform.onEvent((e) => {
      if (e.kind === 'app-function-exited') res.write(`${JSON.stringify({ event: e })}\n`);
    });
    req.on('close', unsubscribe);
  });

  app.use((req, _res, next) => next(notFound(`route ${req.method} ${req.path}`)));
  app.use(errorHandler(log));
  return app;
}
