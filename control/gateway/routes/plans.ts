/**
 * POST /plans/apply (admin): deploys a deployment plan (the file `cornserve plan` writes, as JSON) on the running
 * platform: each component's label is mapped to the deployed task of the plan's app that carries it
 * (control/resources/plan-apply.ts), then the resource manager checks the whole plan and scales all or nothing
 * (ResourceManagerApi.applyPlan). 422 INVALID_PLAN naming the plan's field; 404 for an app that is not registered.
 */
import { Router, type RequestHandler } from 'express';
import { STAGE_OF, taskLabel } from '../../descriptors/labels.js';
import { planTargets, type AppTask } from '../../resources/plan-apply.js';
import { parsePlan, PlanError } from '../../../lib/plan.js';
import { InvalidPlanError } from '../../../lib/resource-errors.js';
import { taskFromRecord } from '../../resources/task-records.js';
import type { ResourceManagerApi, TaskStatus } from '../../resources/types.js';
import type { AppManager } from '../app-manager.js';
import { taskJSON } from './tasks.js';

/** The labelled tasks of an app (tasks whose class has no stage — user-defined — cannot be planned and are left out). */
function labelled(tasks: readonly TaskStatus[]): AppTask[] {
  return tasks.flatMap((t) => {
    const task = taskFromRecord(t);
    const stage = STAGE_OF[task.rootClass.name];
    return stage ? [{ taskId: t.taskId, label: taskLabel(task, stage) }] : [];
  });
}

export function planRoutes(deps: { resources: ResourceManagerApi; apps: AppManager; admin: RequestHandler; json: RequestHandler }): Router {
  const r = Router();
  r.post('/plans/apply', deps.admin, deps.json, async (req, res) => {
    const asPlanError = (e: unknown) => {
      if (!(e instanceof PlanError)) return e;
      const [field, ...rest] = e.message.replace(/^plan: /, '').split(': ');
      return new InvalidPlanError(field!, rest.join(': '));
    };
    let targets;
    try {
      const plan = parsePlan(req.body);
      const app = deps.apps.resolve(plan.app);
      const tasks = (await deps.resources.listTasks()).filter((t) => app.taskIds.includes(t.taskId));
      targets = planTargets(plan, labelled(tasks));
    } catch (e) {
      throw asPlanError(e);
    }
    const applied = await deps.resources.applyPlan(targets);
    res.json({ tasks: applied.map(taskJSON) });
  });
  return r;
}
