/**
 * The task graph: the list of unit-task invocations one `task.call()` produces, and its JSON form
 * `{invocations: [{task_class, task, input, output}], is_streaming}` (docs/architecture.md §4: the CloudEvent's data).
 */
import { z } from 'zod';
import { ValidationError, formatIssues, type FieldIssue } from './errors.js';
import { toJsonValue } from './ids.js';
import { Stream, streamChunkSchema } from './stream.js';
import { getTaskClass, registeredTaskClasses, taskFromJSON, type UnitTask, type UnitTaskJSON } from './task.js';

export interface TaskInvocationJSON {
  task_class: string;
  task: UnitTaskJSON;
  input: unknown;
  output: unknown;
}

export interface TaskGraphJSON {
  invocations: TaskInvocationJSON[];
  is_streaming: boolean;
}

export const taskGraphJsonSchema = z.object({
  invocations: z
    .array(
      z.object({
        task_class: z.string().min(1),
        task: z.object({
          id: z.string().min(1),
          descriptor: z.string().nullable(),
          config: z.record(z.string(), z.unknown()),
        }),
        input: z.unknown(),
        output: z.unknown(),
      }),
    )
    .min(1, 'a task graph needs at least one invocation'),
  is_streaming: z.boolean(),
}) satisfies z.ZodType<TaskGraphJSON>;

export interface TaskInvocation {
  task: UnitTask;
  input: unknown;
  /** The output: a record-time placeholder, or (after execution) the real output; a Stream placeholder when streaming. */
  output: unknown;
}

export interface TaskGraphOptions {
  /** The inputs are plain JSON values nobody else holds (a recording's private copies): toJSON() uses them as they are. */
  inputsAreJson?: boolean;
}

export class TaskGraph {
  readonly #inputsAreJson: boolean;

  constructor(
    readonly invocations: readonly TaskInvocation[],
    options: TaskGraphOptions = {},
  ) {
    this.#inputsAreJson = options.inputsAreJson ?? false;
    if (invocations.length === 0) throw new ValidationError('task graph', [{ path: 'invocations', message: 'must not be empty' }]);
    invocations.forEach((inv, i) => {
      if (inv.task.isStreaming && i !== invocations.length - 1)
        throw new ValidationError('task graph', [
          { path: `invocations.${i}`, message: `${inv.task.name} streams its output, but only the last invocation of a graph may stream` },
        ]);
    });
  }

  get isStreaming(): boolean {
    return this.invocations[this.invocations.length - 1]!.task.isStreaming;
  }

  toJSON(): TaskGraphJSON {
    return {
      invocations: this.invocations.map((inv) => ({
        task_class: inv.task.constructor.name,
        task: inv.task.toJSON(),
        input: this.#inputsAreJson ? inv.input : toJsonValue(inv.input),
        output: toJsonValue(inv.output),
      })),
      is_streaming: this.isStreaming,
    };
  }

  /**
   * The graph as fromJSON(toJSON()) would give it, for a dispatcher in this process: the same tasks (fromJSON would
   * rebuild equal ones), each input and output parsed by its task's schemas from a private JSON copy (wiring mutates
   * them; a recording's inputs already are such copies), a Stream placeholder for a streaming output — without the
   * JSON text, the graph schema and the task lookups, which check what the recording already ensured.
   */
  forDispatch(): TaskGraph {
    return new TaskGraph(
      this.invocations.map((inv, i) =>
        parsedInvocation(i, inv.task, this.#inputsAreJson ? inv.input : toJsonValue(inv.input), () => toJsonValue(inv.output)),
      ),
    );
  }

  /** Parses and validates graph JSON: every task class known, every input and output valid for its task. */
  static fromJSON(json: unknown): TaskGraph {
    const parsed = taskGraphJsonSchema.safeParse(json);
    if (!parsed.success) throw new ValidationError('task graph', formatIssues(parsed.error.issues));
    const invocations = parsed.data.invocations.map((inv, i) =>
      parsedInvocation(i, taskAt(i, inv.task_class, inv.task as UnitTaskJSON), inv.input, () => inv.output),
    );
    const graph = new TaskGraph(invocations);
    if (graph.isStreaming !== parsed.data.is_streaming)
      throw new ValidationError('task graph', [{ path: 'is_streaming', message: `must be ${graph.isStreaming} for this graph` }]);
    return graph;
  }
}

/** Invocation i with its input and (unless it streams) output parsed by the task's schemas; issues at their graph paths. */
function parsedInvocation(i: number, task: UnitTask, inputJson: unknown, outputJson: () => unknown): TaskInvocation {
  const input = task.inputSchema.safeParse(inputJson);
  if (!input.success) throw issuesAt(`invocations.${i}.input`, formatIssues(input.error.issues));
  const chunk = streamChunkSchema(task.outputSchema);
  if (chunk) return { task, input: input.data, output: Stream.placeholder(chunk) };
  const out = task.outputSchema.safeParse(outputJson());
  if (!out.success) throw issuesAt(`invocations.${i}.output`, formatIssues(out.error.issues));
  return { task, input: input.data, output: out.data };
}

/** A graph ValidationError whose issue paths start at `prefix` (e.g. `invocations.2.input`). */
function issuesAt(prefix: string, issues: readonly FieldIssue[]): ValidationError {
  return new ValidationError('task graph', issues.map((x) => ({ ...x, path: x.path === '(root)' ? prefix : `${prefix}.${x.path}` })));
}

/**
 * Tasks rebuilt from graph JSON, by class and exact task JSON: every invocation of an app sends the same few
 * tasks, and a UnitTask is immutable (frozen config), so equal JSON can share one instance (no config parse
 * per invocation; per-task caches such as task ids keyed by instance keep hitting). Bounded: cleared when full.
 */
const TASK_CACHE_MAX = 1024;
const taskCache = new Map<string, UnitTask>();

/** Rebuilds invocation i's task; an unknown class or a bad config is reported at its path in the graph. */
function taskAt(i: number, className: string, json: UnitTaskJSON): UnitTask {
  const key = `${className}\u0000${JSON.stringify(json)}`;
  const cached = taskCache.get(key);
  if (cached) return cached;
  const task = buildTask(i, className, json);
  if (taskCache.size >= TASK_CACHE_MAX) taskCache.clear();
  taskCache.set(key, task);
  return task;
}

function buildTask(i: number, className: string, json: UnitTaskJSON): UnitTask {
  if (!getTaskClass(className))
    throw new ValidationError('task graph', [
      { path: `invocations.${i}.task_class`, message: `unknown unit task class ${className} (known: ${registeredTaskClasses().join(', ') || 'none'})` },
    ]);
  try {
    return taskFromJSON(className, json);
  } catch (e) {
    if (e instanceof ValidationError) throw issuesAt(`invocations.${i}.task.config`, e.issues);
    throw e;
  }
}
