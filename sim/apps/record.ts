/**
 * Our real app files → task graphs, through the SDK's record mode: the app is loaded with the app-function
 * runtime's own loader, its serve() runs once per request kind inside a request scope whose dispatcher keeps
 * the graphs it is handed (and fails the call: nothing runs). Every graph the serve() dispatches before its
 * first await is kept (an app that calls two tasks at once, like any-to-any with audio, gives two).
 * The dispatcher's own wiring (findForwards / wireDataForwards) says which invocation feeds which.
 */
import { readFile } from 'node:fs/promises';
import { findForwards, wireDataForwards } from '../../policies/wiring.js';
import { descriptorFor } from '../../control/descriptors/registry.js';
import { taskIdOf } from '../../control/store/task-id.js';
import { TaskGraph, runInRequestScope, type TaskGraphJSON, type UnitTask } from '../../functions/sdk/index.js';
import { loadAppSource } from '../../functions/runtime/load.js';
import type { StageKind } from '../latency/models.js';
import { STAGE_OF, taskLabel } from '../../control/descriptors/labels.js';

export class ScenarioError extends Error {
  override readonly name = 'ScenarioError';
}

export interface SimTask {
  /** The live platform's task id (control/store taskIdOf). */
  taskId: string;
  /** Readable name used in scenarios: `encoder:image`, `llm:cornserve/tiny-vlm-a`, `echo:echo-20ms-x2`. */
  label: string;
  stage: StageKind;
  devicesPerExecutor: number;
  config: Readonly<Record<string, unknown>>;
}

export interface SimInvocation {
  task: SimTask;
  /** Invocations (of the same graph) whose outputs this one consumes. */
  producers: number[];
}

export interface SimGraph {
  invocations: SimInvocation[];
}

export interface RecordedApp {
  name: string;
  /** Graphs dispatched at once for one request of this kind. */
  graphs: SimGraph[];
}

function simTask(task: UnitTask, tasks: Map<string, SimTask>): SimTask {
  const taskId = taskIdOf(task);
  const known = tasks.get(taskId);
  if (known) return known;
  const stage = STAGE_OF[task.rootClass.name];
  if (!stage) throw new ScenarioError(`apps: task class ${task.rootClass.name} has no latency model in the simulator (known: ${Object.keys(STAGE_OF).join(', ')})`);
  const t: SimTask = { taskId, label: taskLabel(task, stage), stage, devicesPerExecutor: descriptorFor(task).launch(task).devicesPerExecutor, config: task.config as Record<string, unknown> };
  tasks.set(taskId, t);
  return t;
}

/** One recorded graph → invocations with their producers (from the DataForwards, as the dispatcher wires them). */
export function simGraph(json: TaskGraphJSON, tasks: Map<string, SimTask>): SimGraph {
  const graph = TaskGraph.fromJSON(json);
  wireDataForwards(graph, (i) => [i]); // the dispatcher's own check: every forward pairs up
  const producerOf = new Map<string, number>();
  return {
    invocations: graph.invocations.map((inv, i) => {
      const producers = [...new Set(findForwards(inv.input).map((f) => producerOf.get(f.id)!))];
      for (const f of findForwards(inv.output)) producerOf.set(f.id, i);
      return { task: simTask(inv.task, tasks), producers };
    }),
  };
}

/** Runs the app's serve() under record and returns the graphs it dispatched. */
export async function recordGraphs(app: { name: string; request: { safeParse(v: unknown): { success: boolean; data?: unknown; error?: unknown } }; serve(r: unknown): unknown }, body: unknown, where: string): Promise<TaskGraphJSON[]> {
  const parsed = app.request.safeParse(body);
  if (!parsed.success) throw new ScenarioError(`${where}: the app ${app.name} rejects the request: ${String(parsed.error)}`);
  const graphs: TaskGraphJSON[] = [];
  const stop = new Error('recorded');
  const dispatcher = { dispatch: (g: TaskGraphJSON) => (graphs.push(g), Promise.reject(stop)) };
  try {
    await runInRequestScope({ dispatcher }, async () => {
      const out = await app.serve(parsed.data);
      // A streaming reply is consumed so a lazily started call gets recorded too.
      if (out && typeof (out as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') for await (const _ of out as AsyncIterable<unknown>) break;
    });
  } catch (e) {
    if (e !== stop && graphs.length === 0) throw new ScenarioError(`${where}: recording ${app.name} failed: ${(e as Error).message}`);
  }
  if (graphs.length === 0) throw new ScenarioError(`${where}: the app ${app.name} dispatched no task graph for this request`);
  return graphs;
}

const loaded = new Map<string, ReturnType<typeof loadAppFile>>();

/** Loads an app file with the runtime's loader, once per file and process (runs in one process share it). */
export function loadApp(file: string, where: string): ReturnType<typeof loadAppFile> {
  let app = loaded.get(file);
  if (!app) {
    loaded.set(file, (app = loadAppFile(file, where)));
    app.catch(() => loaded.delete(file)); // a failure is not kept: the next run reads the file again
  }
  return app;
}

async function loadAppFile(file: string, where: string) {
  let source: string;
  try {
    source = await readFile(file, 'utf8');
  } catch (e) {
    throw new ScenarioError(`${where}: cannot read app file ${file}: ${(e as Error).message}`);
  }
  try {
    return await loadAppSource(source, file);
  } catch (e) {
    throw new ScenarioError(`${where}: app file ${file} does not load: ${(e as Error).message}`);
  }
}
