/**
 * Task routes: list the deployed unit tasks, scale one (admin), and run a task graph directly
 * (POST /tasks/invoke, forwarded to the dispatcher's POST /graph; for scripts and notebooks).
 */
import type { Agent } from 'node:http';
import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { parseOr422 } from '../../../lib/http.js';
import type { ResourceManagerApi, TaskStatus } from '../../resources/types.js';
import { requestDeadline } from '../deadline.js';
import { readExecution } from '../executor-execution.js';
import { BadRequestError, DispatcherUnavailableError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { forward } from '../proxy.js';
import { profilesByKey } from './profiles.js';

export interface TaskRoutesDeps {
  resources: ResourceManagerApi;
  dispatcherUrl: string;
  metrics: GatewayMetrics;
  agent: Agent;
  admin: RequestHandler;
  json: RequestHandler;
}

const scaleBody = z
  .object({
    task_id: z.string().min(1),
    num_devices: z.number().int().optional(),
    /** The reference's field name. */
    num_gpus: z.number().int().optional(),
  })
  .refine((b) => b.num_devices !== undefined || b.num_gpus !== undefined, { message: 'num_devices is required (+n adds devices, -n removes them)', path: ['num_devices'] });

/** The wire form of a task in /tasks/list and /task/scale replies. */
export function taskJSON(t: TaskStatus) {
  return {
    task_id: t.taskId,
    name: t.name,
    task_class: t.taskClass,
    task: t.task,
    state: t.state,
    usage: t.usage,
    devices: t.devices,
    executors: t.executors.map((e) => ({ executor_id: e.executorId, url: e.url, state: e.state, outstanding: e.outstanding, devices: e.devices })),
  };
}

export function taskRoutes(deps: TaskRoutesDeps): Router {
  const r = Router();

  r.get('/tasks/list', async (_req, res) => {
    const [list, profileOf] = await Promise.all([deps.resources.listTasks(), profilesByKey(deps.resources)]);
    const tasks = list.map((t) => ({ ...taskJSON(t), profile: profileOf(t.key) }));
    // Each executor's provider and device, from its /health (in parallel, bounded).
    await Promise.all(tasks.flatMap((t) => t.executors.map(async (e) => Object.assign(e, { execution: await readExecution(e.url) }))));
    res.json(tasks);
  });

  r.post('/task/scale', deps.admin, deps.json, async (req, res) => {
    const body = parseOr422(scaleBody, req.body, 'scale body');
    const delta = body.num_devices ?? body.num_gpus!;
    if (delta === 0) throw new BadRequestError('num_devices must not be 0: give +n to add devices or -n to remove them');
    res.json(taskJSON(await deps.resources.scale(body.task_id, delta)));
  });

  r.post('/tasks/invoke', deps.json, async (req, res) => {
    const deadline = requestDeadline(req);
    await forward(res, {
      url: new URL('/graph', deps.dispatcherUrl).href,
      body: JSON.stringify(req.body),
      deadline,
      ...(typeof req.headers.traceparent === 'string' ? { traceparent: req.headers.traceparent } : {}),
      agent: deps.agent,
      what: 'the dispatcher',
      onFailure: (err) => new DispatcherUnavailableError(err.message),
      onErrorCode: (code) => deps.metrics.errors.inc({ code }),
    });
  });

  return r;
}
