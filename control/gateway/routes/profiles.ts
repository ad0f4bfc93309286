/**
 * Profiles: POST /task/profile {task_id} (admin) profiles a deployed task on one of its executors and stores the
 * result (control/taskmanager/profiler-run.ts); `profileJSON` is the wire form /tasks/list shows for each task
 * (the profile stored under its unit-task key, from whichever app measured it).
 */
import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { parseOr422 } from '../../../lib/http.js';
import type { ProfilePoint, TaskProfile } from '../../../lib/autoscale.js';
import { saturationPoint } from '../../../policies/frontier.js';
import type { ResourceManagerApi } from '../../resources/types.js';

const profileBody = z.object({ task_id: z.string().min(1) });

const pointJSON = (p: ProfilePoint) => ({ devices_per_executor: p.devicesPerExecutor, concurrency: p.concurrency, throughput_rps: p.throughputRps, p50_ms: p.p50Ms, p99_ms: p.p99Ms });

export function profileJSON(p: TaskProfile) {
  const saturation = saturationPoint(p.points);
  return {
    device_kind: p.deviceKind,
    measured_at: new Date(p.measuredAt).toISOString(),
    points: p.points.map(pointJSON),
    frontier: p.frontier.map(pointJSON),
    saturation: saturation ? pointJSON(saturation) : null,
  };
}

/** The profile of each task, by task key (null when none is stored). */
export async function profilesByKey(resources: ResourceManagerApi): Promise<(key: string) => ReturnType<typeof profileJSON> | null> {
  const byKey = new Map((await resources.listProfiles()).map((p) => [p.taskKey, p]));
  return (key) => {
    const p = byKey.get(key);
    return p ? profileJSON(p) : null;
  };
}

export function profileRoutes(deps: { resources: ResourceManagerApi; admin: RequestHandler; json: RequestHandler }): Router {
  const r = Router();
  r.post('/task/profile', deps.admin, deps.json, async (req, res) => {
    const { task_id } = parseOr422(profileBody, req.body, 'profile body');
    const result = await deps.resources.profile(task_id);
    res.json({ task_id: result.taskId, executor_id: result.executorId, ...profileJSON(result.profile), skipped: result.skipped.map((s) => ({ devices_per_executor: s.devicesPerExecutor, reason: s.reason })) });
  });
  return r;
}
