/**
 * `--check FILE`: what the gateway learns about an app source without running it in the gateway.
 * The check process prints exactly one line `CORNSERVE_CHECK <CheckResult JSON>` on stdout (user code may
 * print too, so the gateway looks for the marker). Unit tasks travel as their class name + task JSON, which
 * the gateway turns back into tasks with taskFromJSON (built-in task classes only).
 */
import { readFile } from 'node:fs/promises';
import { definitionFromSpec, isCornserveError, type TaskDefinitionJSON, type UnitTaskJSON } from '../sdk/index.js';
import { requestExample, requestFields } from './example.js';
import { importSource, loadAppSource } from './load.js';

export const CHECK_MARKER = 'CORNSERVE_CHECK';

export interface CheckedUnitTask {
  /** The task's own class (registered with registerTaskClass), e.g. 'EchoStreamTask'. */
  task_class: string;
  /** The root unit-task class (decides sharing), e.g. 'EchoBaseTask'. */
  root_class: string;
  name: string;
  task: UnitTaskJSON;
  /** The app's autoscaling default for this unit task (defineApp autoscaling), when it has one. */
  autoscaling?: { min: number; max: number; target?: number; sloMs?: number };
}

export type CheckResult =
  | { ok: true; name: string; unit_tasks: CheckedUnitTask[]; request_example?: unknown; request_example_full?: unknown; request_fields?: string }
  | { ok: false; problems: string[] };

export async function checkAppFile(file: string): Promise<CheckResult> {
  try {
    const app = await loadAppSource(await readFile(file, 'utf8'), file);
    return {
      ok: true,
      name: app.name,
      unit_tasks: app.unitTasks().map((t) => {
        const autoscaling = app.autoscalingOf(t);
        return { task_class: t.constructor.name, root_class: t.rootClass.name, name: t.name, task: t.toJSON(), ...(autoscaling ? { autoscaling } : {}) };
      }),
      request_example: requestExample(app.request),
      request_example_full: requestExample(app.request, true),
      request_fields: requestFields(app.request),
    };
  } catch (e) {
    const problems = (e as { problems?: unknown }).problems;
    if (Array.isArray(problems)) return { ok: false, problems: problems.map(String) };
    return { ok: false, problems: [isCornserveError(e) || e instanceof Error ? e.message : String(e)] };
  }
}

export type TaskCheckResult = { ok: true; definition: TaskDefinitionJSON } | { ok: false; problems: string[] };

/** `--check-task FILE`: a registry file's unit task definition (or its problems). */
export async function checkTaskFile(file: string): Promise<TaskCheckResult> {
  try {
    const mod = (await importSource(await readFile(file, 'utf8'), file)) as { default?: unknown };
    return { ok: true, definition: definitionFromSpec(mod.default) };
  } catch (e) {
    const problems = (e as { problems?: unknown }).problems;
    if (Array.isArray(problems)) return { ok: false, problems: problems.map(String) };
    return { ok: false, problems: [isCornserveError(e) || e instanceof Error ? e.message : String(e)] };
  }
}

/** Finds the check result in a check process's stdout. */
export function parseCheckOutput<R = CheckResult>(stdout: string): R | undefined {
  const line = stdout.split('\n').reverse().find((l) => l.startsWith(`${CHECK_MARKER} `));
  return line ? (JSON.parse(line.slice(CHECK_MARKER.length + 1)) as R) : undefined;
}
