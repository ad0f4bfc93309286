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
}

export interface App<Req = any, Res = any> extends Readonly<AppSpec<Req, Res>> {
  readonly [APP_MARK]: true;
  /** The deduplicated unit tasks this app needs deployed. */
  unitTasks(): UnitTask[];
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
  return problems;
}

export function defineApp<Req, Res>(spec: AppSpec<Req, Res>): App<Req, Res> {
  const problems = appSpecProblems(spec);
  if (problems.length) throw new AppDefinitionError(problems);
  const units = dedupeUnitTasks(discoverUnitTasks(Object.values(spec.tasks)));
  return Object.freeze({ ...spec, [APP_MARK]: true as const, unitTasks: () => [...units] });
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
