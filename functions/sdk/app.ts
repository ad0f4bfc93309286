/**
 * Apps: a module whose default export is `defineApp({ name, tasks, request, response, serve })`.
 *
 * `serve(request)` returns the response, or an async iterable of response chunks (a streaming app; then
 * `response` validates each chunk). `tasks` declares every task serve() may use, so their unit tasks are
 * deployed when the app is registered.
 */
import type { z } from 'zod';
import { AppDefinitionError } from './errors.js';
import { Task, dedupeUnitTasks, discoverUnitTasks, type UnitTask } from './task.js';

const APP_MARK = Symbol.for('cornserve.app');

export type ServeResult<Res> = Res | AsyncIterable<Res>;

export interface AppSpec<Req, Res> {
  /** Lowercase letters, digits and dashes; unique among registered apps; also the OpenAI `model` name. */
  name: string;
  /** Every task serve() may call (unit or composite), by any name. */
  tasks: Record<string, Task>;
  /** Validates the request body (`request_data`). */
  request: z.ZodType<Req>;
  /** Validates the response, or each chunk when serve() streams. */
  response: z.ZodType<Res>;
  serve(request: Req): Promise<ServeResult<Res>> | AsyncIterable<Res>;
  /**
   * Autoscaling defaults per task (keys of `tasks`), applied to every unit task of that task when the app is
   * registered, unless an operator set a policy (`cornserve autoscale`). `target` = in-flight requests per
   * executor (default 2), or `sloMs` = a latency objective. `min: 0` lets the task scale to zero.
   */
  autoscaling?: Record<string, AppAutoscaling>;
}

export interface AppAutoscaling {
  min: number;
  max: number;
  target?: number;
  sloMs?: number;
}

export interface App<Req = any, Res = any> extends Readonly<AppSpec<Req, Res>> {
  readonly [APP_MARK]: true;
  /** The deduplicated unit tasks this app needs deployed. */
  unitTasks(): UnitTask[];
  /** The autoscaling default of each unit task that has one (from `autoscaling`). */
  autoscalingOf(unit: UnitTask): AppAutoscaling | undefined;
}

export const APP_NAME_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;

const isZodSchema = (v: unknown): v is z.ZodType =>
  typeof v === 'object' && v !== null && typeof (v as { safeParse?: unknown }).safeParse === 'function' && '_zod' in v;

/** Everything wrong with an app spec, as readable sentences (empty when it is fine). */
export function appSpecProblems(spec: unknown): string[] {
  if (typeof spec !== 'object' || spec === null) return ['the app must be an object made by defineApp({...})'];
  const s = spec as Partial<AppSpec<unknown, unknown>>;
  const problems: string[] = [];
  if (typeof s.name !== 'string' || !APP_NAME_PATTERN.test(s.name))
    problems.push(`name must match ${APP_NAME_PATTERN} (got ${JSON.stringify(s.name)})`);
  if (typeof s.serve !== 'function') problems.push('serve must be a function: async serve(request) { ... }');
  else if (s.serve.length > 1) problems.push('serve must take exactly one parameter (the request)');
  if (!isZodSchema(s.request)) problems.push('request must be a zod schema');
  if (!isZodSchema(s.response)) problems.push('response must be a zod schema');
  if (typeof s.tasks !== 'object' || s.tasks === null || Array.isArray(s.tasks)) problems.push('tasks must be an object of named tasks');
  else
    for (const [k, t] of Object.entries(s.tasks))
      if (!(t instanceof Task)) problems.push(`tasks.${k} is not a Task (make it with new SomeTask({...}))`);
  if (s.autoscaling !== undefined) problems.push(...autoscalingProblems(s.autoscaling, s.tasks));
  return problems;
}

function autoscalingProblems(autoscaling: unknown, tasks: unknown): string[] {
  if (typeof autoscaling !== 'object' || autoscaling === null || Array.isArray(autoscaling)) return ['autoscaling must be an object: {taskName: {min, max, target?}}'];
  const problems: string[] = [];
  const names = typeof tasks === 'object' && tasks !== null ? Object.keys(tasks) : [];
  const isInt = (v: unknown, least: number) => typeof v === 'number' && Number.isInteger(v) && v >= least;
  for (const [k, p] of Object.entries(autoscaling as Record<string, Partial<AppAutoscaling>>)) {
    const at = `autoscaling.${k}`;
    if (!names.includes(k)) problems.push(`${at}: no task named ${k} in tasks`);
    if (typeof p !== 'object' || p === null) {
      problems.push(`${at} must be {min, max, target?} or {min, max, sloMs}`);
      continue;
    }
    if (!isInt(p.min, 0)) problems.push(`${at}.min must be an integer >= 0`);
    if (!isInt(p.max, 1)) problems.push(`${at}.max must be an integer >= 1`);
    if (isInt(p.min, 0) && isInt(p.max, 1) && p.min! > p.max!) problems.push(`${at}.min must not be greater than max`);
    if (p.target !== undefined && p.sloMs !== undefined) problems.push(`${at}: give target or sloMs, not both`);
    if (p.target !== undefined && !(typeof p.target === 'number' && p.target > 0)) problems.push(`${at}.target must be a number > 0`);
    if (p.sloMs !== undefined && !(typeof p.sloMs === 'number' && p.sloMs > 0)) problems.push(`${at}.sloMs must be a number > 0`);
  }
  return problems;
}

export function defineApp<Req, Res>(spec: AppSpec<Req, Res>): App<Req, Res> {
  const problems = appSpecProblems(spec);
  if (problems.length) throw new AppDefinitionError(problems);
  const units = dedupeUnitTasks(discoverUnitTasks(Object.values(spec.tasks)));
  // Each unit task takes the policy of the (first) named task it belongs to.
  const policies = new Map<UnitTask, AppAutoscaling>();
  for (const [name, policy] of Object.entries(spec.autoscaling ?? {})) {
    for (const unit of discoverUnitTasks([spec.tasks[name]!])) {
      const same = units.find((u) => u === unit || u.toJSON() === unit.toJSON() || JSON.stringify(u.toJSON()) === JSON.stringify(unit.toJSON()));
      if (same && !policies.has(same)) policies.set(same, { ...policy });
    }
  }
  return Object.freeze({ ...spec, [APP_MARK]: true as const, unitTasks: () => [...units], autoscalingOf: (unit: UnitTask) => policies.get(unit) });
}

export function isApp(v: unknown): v is App {
  return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[APP_MARK] === true;
}

/**
 * Checks a loaded module: a default export made by defineApp. Returns the app, or throws an
 * AppDefinitionError naming every problem found.
 */
export function appFromModule(mod: unknown): App {
  if (typeof mod !== 'object' || mod === null) throw new AppDefinitionError(['the module did not load to an object']);
  const def = (mod as { default?: unknown }).default;
  if (def === undefined) throw new AppDefinitionError(['no default export: end the file with `export default defineApp({...})`']);
  if (isApp(def)) return def;
  const problems = appSpecProblems(def);
  throw new AppDefinitionError(problems.length ? problems : ['the default export was not made by defineApp({...})']);
}
