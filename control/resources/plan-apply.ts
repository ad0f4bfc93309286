/**
 * A plan file → what the resource manager deploys: each component's label mapped to the deployed task of the
 * plan's app that carries it. Pure. Errors name the plan's field (PlanError); the resource manager then checks
 * what only it knows (devices per executor, the fit, autoscaling bounds) and applies all or nothing.
 */
import type { PlanTarget } from './types.js';
import { PlanError, type Plan } from '../../lib/plan.js';

/** A deployed task of the plan's app, with its label (control/descriptors/labels.ts). */
export interface AppTask {
  taskId: string;
  label: string;
}

export function planTargets(plan: Plan, appTasks: readonly AppTask[]): PlanTarget[] {
  const byLabel = new Map<string, AppTask[]>();
  for (const t of appTasks) byLabel.set(t.label, [...(byLabel.get(t.label) ?? []), t]);
  const known = () => [...byLabel.keys()].sort().join(', ') || 'none';
  const targets: PlanTarget[] = [];
  plan.components.forEach((c, i) => {
    const field = `components[${i}]`;
    const matches = byLabel.get(c.label) ?? [];
    if (matches.length > 1) throw new PlanError(`${field}.label: '${c.label}' names ${matches.length} tasks of app ${plan.app} (${matches.map((m) => m.taskId).join(', ')})`);
    const task = matches[0];
    if (!task) {
      // An encoder kept inside its LLM (monolithic or mixed plan) is no task of an app built that way.
      if (c.replicas === 0 && c.stage === 'encoder') return;
      throw new PlanError(`${field}.label: '${c.label}' is not a task of app ${plan.app} (its tasks: ${known()})`);
    }
    if (c.replicas === 0) {
      throw new PlanError(`${field}.replicas: 0 executors of '${c.label}' means it runs inside its consumer, but app ${plan.app} calls it as a task of its own; register the app with the encoder inside (encoderFission: false) to run this plan`);
    }
    const placement = plan.placement.flatMap((p, j) => (p.label === c.label ? [{ node: p.node, executors: p.executors, field: `placement[${j}]` }] : []));
    targets.push({ taskId: task.taskId, field, executors: c.replicas, devicesPerExecutor: c.devicesPerExecutor, placement });
  });
  return targets;
}
