/**
 * Tasks: descriptions of model work.
 *
 *  - UnitTask: one deployable component (an encoder, an LLM, a generator). Its `config` (validated by the
 *    root class's `configSchema`) decides equivalence: unit tasks with the same root class, descriptor and
 *    config are deployed once and shared by every app that declares them.
 *  - CompositeTask: plain synchronous code over other tasks. Its subtasks are the Task-valued properties
 *    it holds (directly, or inside arrays, Maps and plain objects); discovery is recursive.
 *
 * `invoke(input)` is synchronous and deterministic; `await task.call(input)` runs record -> dispatch -> replay
 * (see context.ts).
 */
import { z } from 'zod';
import { RecordReplayError, ValidationError, formatIssues } from './errors.js';
import { canonicalJson, randomHex } from './ids.js';
import { currentContext, callTask, type CallOptions } from './context.js';
import { streamChunkSchema } from './stream.js';

export abstract class Task<I = any, O = any> {
  readonly id: string = randomHex();
  /** Validates the input of call(). Unit tasks must have one; composites may. */
  readonly inputSchema?: z.ZodType<I>;

  /** Synchronous and deterministic: control flow may depend on the input only, never on task outputs. */
  abstract invoke(input: I): O;

  /**
   * Runs the task: record the unit-task calls invoke() makes, dispatch them as one graph, replay with real outputs.
   * Takes what the input schema accepts (fields with defaults may be left out); invoke() gets the parsed input.
   */
  call(input: SchemaInput<this['inputSchema'], I>, options: CallOptions = {}): Promise<O> {
    return callTask(this, input as I, options);
  }

  /** A short, human-readable name (used in logs and as the base of executor names). */
  abstract get name(): string;
}

/**
 * What call() (and a unit task's invoke()) accepts: the input type of the task's input schema `S`, so fields with
 * defaults are optional; `Fallback` (the task's input type) when there is no schema or its input type is unknown.
 */
export type SchemaInput<S, Fallback> = S extends z.ZodType<any, infer In> ? (unknown extends In ? Fallback : In) : Fallback;

export interface UnitTaskOptions {
  /** Execution descriptor name; null = the task's default descriptor. */
  descriptor?: string | null;
  /** Only when rebuilding a task from JSON. */
  id?: string;
}

export interface UnitTaskJSON {
  id: string;
  descriptor: string | null;
  config: Record<string, unknown>;
}

type AnyConfigSchema = z.ZodObject<z.ZodRawShape>;

/** The constructor side of a unit task class: the registry stores these. */
export interface UnitTaskClass<T extends UnitTask = UnitTask> {
  new (config: any, options?: UnitTaskOptions): T;
  readonly name: string;
  readonly configSchema: AnyConfigSchema;
}

export abstract class UnitTask<S extends AnyConfigSchema = AnyConfigSchema, I = any, O = any> extends Task<I, O> {
  /** Declared fields of the unit task; defined on the root class (the direct subclass of UnitTask). */
  static readonly configSchema: AnyConfigSchema = z.object({});

  readonly config: Readonly<z.output<S>>;
  readonly descriptor: string | null;
  abstract override readonly inputSchema: z.ZodType<I>;
  abstract readonly outputSchema: z.ZodType<O>;

  constructor(config: z.input<S>, options: UnitTaskOptions = {}) {
    super();
    const root = rootUnitTaskClass(this.constructor as UnitTaskClass);
    const parsed = root.configSchema.safeParse(config);
    if (!parsed.success) throw new ValidationError(`${this.constructor.name} config`, formatIssues(parsed.error.issues));
    // Deep-frozen: the config decides equivalence, and unitTaskKey() is computed once per instance.
    this.config = deepFreeze(parsed.data) as Readonly<z.output<S>>;
    this.descriptor = options.descriptor ?? null;
    if (options.id) (this as { id: string }).id = options.id;
  }

  /** The placeholder output returned at record time: the right shape (list lengths, fresh DataForward ids). */
  abstract makeRecordOutput(input: I): O;

  /** Extra checks on a schema-valid input, at record time. Throw a ValidationError. */
  validateInput(_input: I): void {}

  /** True when the output is a Stream (only the last invocation of a graph may stream). */
  get isStreaming(): boolean {
    return streamChunkSchema(this.outputSchema) !== undefined;
  }

  get rootClass(): UnitTaskClass {
    return rootUnitTaskClass(this.constructor as UnitTaskClass);
  }

  /** Record: returns the placeholder and records the call. Replay: returns the real output, in call order. */
  invoke(input: SchemaInput<this['inputSchema'], I>): O {
    const ctx = currentContext();
    if (!ctx) throw new RecordReplayError(`${this.name}.invoke() was called outside task.call(); use await task.call(input)`);
    return ctx.invokeUnit(this, input) as O;
  }

  /** Same root class, same descriptor, equal declared fields (the id does not count). */
  isEquivalentTo(other: unknown): boolean {
    return other instanceof UnitTask && unitTaskKey(other) === unitTaskKey(this);
  }

  toJSON(): UnitTaskJSON {
    return { id: this.id, descriptor: this.descriptor, config: { ...this.config } };
  }
}

export abstract class CompositeTask<I = any, O = any> extends Task<I, O> {
  /** The tasks this composite calls. Default: every Task-valued property (also inside arrays, Maps, plain objects). */
  subtasks(): Task[] {
    const found: Task[] = [];
    const visit = (v: unknown, depth: number) => {
      if (v instanceof Task) found.push(v);
      else if (depth > 0 && Array.isArray(v)) v.forEach((x) => visit(x, depth - 1));
      else if (depth > 0 && v instanceof Map) v.forEach((x) => visit(x, depth - 1));
      else if (depth > 0 && v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype)
        Object.values(v).forEach((x) => visit(x, depth - 1));
    };
    for (const v of Object.values(this)) visit(v, 2);
    return found;
  }
}

/** The first class in the chain whose parent is UnitTask: subclasses share their root's deployment. */
export function rootUnitTaskClass(cls: UnitTaskClass): UnitTaskClass {
  let c: UnitTaskClass = cls;
  for (;;) {
    const parent = Object.getPrototypeOf(c) as UnitTaskClass | null;
    if (!parent || parent === (UnitTask as unknown)) return c;
    if (parent === (Function.prototype as unknown)) throw new Error(`${cls.name} is not a UnitTask class`);
    c = parent;
  }
}

/**
 * Keys per instance: a unit task is immutable once built (its class, descriptor and deep-frozen config are what
 * the key is made of; `descriptor` is a readonly field, by TypeScript only: assigning it at run time is
 * unsupported), and tasks are module-level constants called on every request.
 */
const keyCache = new WeakMap<UnitTask, string>();

/** Equal keys = equivalent unit tasks. Root class name + descriptor + canonical config. */
export function unitTaskKey(task: UnitTask): string {
  let key = keyCache.get(task);
  if (key === undefined) {
    key = `${task.rootClass.name}|${task.descriptor ?? ''}|${canonicalJson(task.config)}`;
    keyCache.set(task, key);
  }
  return key;
}

/** Freezes plain objects and arrays all the way down (a parsed config holds nothing else worth freezing). */
function deepFreeze<T>(value: T): T {
  const plain = Array.isArray(value) || (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype);
  if (plain && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) deepFreeze(v);
  }
  return value;
}

/** Every unit task reachable from `tasks`, depth first, in declaration order (duplicates kept). */
export function discoverUnitTasks(tasks: Iterable<Task>): UnitTask[] {
  const out: UnitTask[] = [];
  const seen = new Set<Task>();
  const walk = (t: Task) => {
    if (seen.has(t)) return;
    seen.add(t);
    if (t instanceof UnitTask) out.push(t);
    else if (t instanceof CompositeTask) t.subtasks().forEach(walk);
  };
  for (const t of tasks) walk(t);
  return out;
}

/** Keeps the first of each group of equivalent unit tasks. */
export function dedupeUnitTasks(tasks: Iterable<UnitTask>): UnitTask[] {
  const byKey = new Map<string, UnitTask>();
  for (const t of tasks) if (!byKey.has(unitTaskKey(t))) byKey.set(unitTaskKey(t), t);
  return [...byKey.values()];
}

// ---------- the registry of unit task classes (graph JSON -> task instances) ----------

const REGISTRY = new Map<string, UnitTaskClass>();

export function registerTaskClass(cls: UnitTaskClass): void {
  const existing = REGISTRY.get(cls.name);
  if (existing && existing !== cls) throw new Error(`another unit task class is already registered as ${cls.name}`);
  rootUnitTaskClass(cls); // throws for non-unit-task classes
  REGISTRY.set(cls.name, cls);
}

/** Removes a class (a run-time registered task whose definition was removed). */
export function unregisterTaskClass(name: string): void {
  REGISTRY.delete(name);
}

export function getTaskClass(name: string): UnitTaskClass | undefined {
  return REGISTRY.get(name);
}

export function registeredTaskClasses(): string[] {
  return [...REGISTRY.keys()].sort();
}

export function taskFromJSON(className: string, json: UnitTaskJSON): UnitTask {
  const cls = REGISTRY.get(className);
  if (!cls) throw new ValidationError('task graph', [{ path: 'task_class', message: `unknown unit task class ${className}` }]);
  return new cls(json.config, { descriptor: json.descriptor, id: json.id });
}
