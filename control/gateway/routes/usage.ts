/**
 * POST /tasks/usage and DELETE /tasks/usage: the reference's declare_used / declare_not_used over plain HTTP,
 * with the same UnitTaskList body. POST adds one usage to each task (deploying what is missing; all or nothing)
 * and answers the task ids; DELETE removes one (a task at 0 is torn down; unknown tasks are skipped). Usage taken
 * here is not tied to a session: the caller gives it back.
 */
import { Router, type RequestHandler } from 'express';
import type { ResourceManagerApi } from '../../resources/types.js';
import { taskIdOf } from '../../store/index.js';
import { parseTaskList } from '../sessions/task-list.js';

export function usageRoutes(deps: { resources: ResourceManagerApi; json: RequestHandler }): Router {
  const r = Router();
  r.post('/tasks/usage', deps.json, async (req, res) => {
    const tasks = parseTaskList(req.body);
    const taskIds = await deps.resources.deploy(tasks);
    res.json({ task_ids: taskIds });
  });
  r.delete('/tasks/usage', deps.json, async (req, res) => {
    const taskIds = [...new Set(parseTaskList(req.body).map(taskIdOf))];
    await deps.resources.release(taskIds);
    res.json({ task_ids: taskIds });
  });
  return r;
}
