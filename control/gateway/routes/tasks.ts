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
import { DEFAULT_TARGET_IN_FLIGHT } from '../../../policies/autoscaler.js';
import { BadRequestError, DispatcherUnavailableError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import type { Ticket } from '../in-flight.js';
import { forward } from '../proxy.js';
import { profilesByKey } from './profiles.js';
import { taskClassNameOf } from '../../resources/task-records.js';

export interface TaskRoutesDeps {
  resources: ResourceManagerApi;
  dispatcherUrl: string;
  metrics: GatewayMetrics;
  agent: Agent;
  admin: RequestHandler;
  json: RequestHandler;
  /** Counts a POST /tasks/invoke in the gateway's drain (AppManager.admitTaskGraph). */
  admit: () => Ticket;
}

const scaleBody = z
  .object({
    task_id: z.string().min(1),
    num_devices: z.number().int().optional(),
    /** The reference's field name. */
    num_gpus: z.number().int().optional(),
  })
  .refine((b) => b.num_devices !== undefined || b.num_gpus !== undefined, { message: 'num_devices is required (+n adds devices, -n removes them)', path: ['num_devices'] });

const autoscaleBody = z
  .object({
    task_id: z.string().min(1),
    min: z.number().int().min(0),
    max: z.number().int().min(1),
    target: z.number().positive().optional(),
    slo_ms: z.number().positive().optional(),
  })
  .refine((b) => !(b.target !== undefined && b.slo_ms !== undefined), { message: 'give target or slo_ms, not both', path: ['slo_ms'] })
  .refine((b) => b.min <= b.max, { message: 'min must not be greater than max', path: ['min'] });

/** How many executors a task has: ready ones count as serving. */
const readyCount = (t: TaskStatus) => t.executors.filter((e) => e.state === 'ready').length;

/** The wire form of a task in /tasks/list and /task/scale replies. */
export function taskJSON(t: TaskStatus) {
  const a = t.autoscale;
  return {
    task_id: t.taskId,
    name: t.name,
    task_class: t.taskClass,
    // The concrete class: with `task`, what /tasks/usage and /session declare (task_class is the abstract root).
    class_name: taskClassNameOf(t) ?? t.taskClass,
    task: t.task,
    state: t.state,
    usage: t.usage,
    devices: t.devices,
    executors: t.executors.map((e) => ({ executor_id: e.executorId, url: e.url, state: e.state, outstanding: e.outstanding, devices: e.devices })),
    // Autoscaling (null fields when the platform runs with --no-autoscale)
    ready_executors: readyCount(t),
    desired: a ? a.desired : null,
    demand: a ? a.demandRps : null,
    queue_depth: a?.queueDepth ?? null,
    busy_fraction: a?.busyFraction ?? null,
    capacity: a?.capacity ? { per_executor_rps: a.capacity.perExecutorRps, source: a.capacity.source } : null,
    autoscale: a
      ? {
          source: a.source,
          policy: a.policy ? { min: a.policy.min, max: a.policy.max, ...('target' in a.policy ? { target: a.policy.target } : { slo_ms: a.policy.sloMs }) } : null,
          ...(a.coldStart ? { cold_start_ms: a.coldStart.ms } : {}),
          ...(a.paused ? { paused: a.paused } : {}),
        }
      : null,
    last_decision: a?.lastDecision ?? null,
    ...(t.sidecarDown ? { sidecar_down: t.sidecarDown } : {}),
  };
}

/** A parsed body back to text: one nested past the stack's depth is the client's error (JSON.parse took it, stringify cannot). */
function jsonText(body: unknown): string {
  try {
    return JSON.stringify(body);
  } catch (e) {
    if (e instanceof RangeError) throw new BadRequestError('the request body is nested too deeply');
    throw e;
  }
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

  r.post('/task/autoscale', deps.admin, deps.json, async (req, res) => {
    const body = parseOr422(autoscaleBody, req.body, 'autoscale body');
    const policy = body.slo_ms !== undefined ? { min: body.min, max: body.max, sloMs: body.slo_ms } : { min: body.min, max: body.max, target: body.target ?? DEFAULT_TARGET_IN_FLIGHT };
    res.json(taskJSON(await deps.resources.setAutoscale(body.task_id, policy, 'admin')));
  });

  r.post('/tasks/invoke', deps.json, async (req, res) => {
    const deadline = requestDeadline(req);
    const ticket = deps.admit(); // 503 once the gateway stops; its drain waits for this request
    res.on('close', ticket.end);
    await forward(res, {
      signal: ticket.signal,
      url: new URL('/graph', deps.dispatcherUrl).href,
      body: jsonText(req.body),
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
