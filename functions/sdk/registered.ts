/**
 * User-defined unit tasks, registered at run time (docs/registry.md).
 *
 * A registry file default-exports `defineUnitTask({...})`: a name, a class name, zod schemas for the config, the
 * input and the output, and a declarative descriptor (an HTTP JSON executor: how to launch it, which path takes the
 * input as its JSON body; the JSON reply is the output). A throwaway check process loads the file and turns it into
 * a TaskDefinitionJSON (schemas as JSON Schema); every other process rebuilds the task class from that JSON with
 * unitTaskClassFrom(), so no control-plane process runs the user's code.
 */
import { z } from 'zod';
import { ValidationError } from './errors.js';
import { canonicalJson } from './ids.js';
import { UnitTask, getTaskClass, registerTaskClass, unregisterTaskClass, type UnitTaskClass } from './task.js';

/** How to start the executor. Locally a Node script (run with `node --import tsx`); on Kubernetes an image. */
export interface ExecutorLaunch {
  /** Local platform: the script's absolute path (or relative to the repository root). */
  script: string;
  /** Kubernetes platform: the container image. */
  image?: string;
  args?: string[];
  env?: Record<string, string>;
  /** Polled until 200. @default /health */
  healthPath?: string;
  /** @default 1 */
  devicesPerExecutor?: number;
}

/** The one descriptor kind so far: POST `path` with the task input as the JSON body; the JSON reply is the output. */
export interface HttpJsonDescriptor {
  kind: 'http-json';
  path: string;
  launch: ExecutorLaunch;
}

export const DESCRIPTOR_KINDS = ['http-json'] as const;

export interface UnitTaskSpec<C extends z.ZodObject<z.ZodRawShape>, I extends z.ZodType, O extends z.ZodType> {
  /** Lowercase with dashes: the registry name, `import ... from 'cornserve/registry/<name>'`. */
  name: string;
  /** The task class's name (decides sharing, like a built-in root class), e.g. 'WordCountTask'. */
  className: string;
  config: C;
  input: I;
  output: O;
  descriptor: HttpJsonDescriptor;
}

export const UNIT_TASK_SPEC = Symbol.for('cornserve.unitTaskSpec');

/** What a registry file default-exports. */
export function defineUnitTask<C extends z.ZodObject<z.ZodRawShape>, I extends z.ZodType, O extends z.ZodType>(spec: UnitTaskSpec<C, I, O>): UnitTaskSpec<C, I, O> {
  return Object.assign(spec, { [UNIT_TASK_SPEC]: true });
}

/** The definition as plain JSON: what the Store keeps and every process rebuilds the class from. */
export interface TaskDefinitionJSON {
  name: string;
  className: string;
  configSchema: unknown;
  inputSchema: unknown;
  outputSchema: unknown;
  descriptor: HttpJsonDescriptor;
}

export const TASK_NAME_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;
const CLASS_NAME_PATTERN = /^[A-Z][A-Za-z0-9_]{0,99}$/;

const launchSchema = z.object({
  script: z.string().min(1),
  image: z.string().min(1).optional(),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  healthPath: z.string().startsWith('/').optional(),
  devicesPerExecutor: z.number().int().nonnegative().optional(),
});

/** Checks a spec (a registry file's default export) and turns it into its JSON definition; throws naming every problem. */
export function definitionFromSpec(spec: unknown): TaskDefinitionJSON {
  if (!spec || typeof spec !== 'object' || !(UNIT_TASK_SPEC in spec)) throw new ValidationError('registry file', [{ path: 'default export', message: 'must be defineUnitTask({...}) (no unit task is exported)' }]);
  const s = spec as unknown as UnitTaskSpec<z.ZodObject<z.ZodRawShape>, z.ZodType, z.ZodType>;
  const issues: Array<{ path: string; message: string }> = [];
  if (typeof s.name !== 'string' || !TASK_NAME_PATTERN.test(s.name)) issues.push({ path: 'name', message: 'lowercase letters, digits and dashes, starting with a letter' });
  if (typeof s.className !== 'string' || !CLASS_NAME_PATTERN.test(s.className)) issues.push({ path: 'className', message: 'a class name (starts with a capital letter)' });
  if (!(s.config instanceof z.ZodObject)) issues.push({ path: 'config', message: 'must be a zod object schema' });
  if (!(s.input instanceof z.ZodType)) issues.push({ path: 'input', message: 'must be a zod schema' });
  if (!(s.output instanceof z.ZodType)) issues.push({ path: 'output', message: 'must be a zod schema' });
  const d = s.descriptor as Partial<HttpJsonDescriptor> | undefined;
  if (!d || typeof d !== 'object') issues.push({ path: 'descriptor', message: 'is required' });
  else if (!(DESCRIPTOR_KINDS as readonly unknown[]).includes(d.kind)) issues.push({ path: 'descriptor.kind', message: `unknown descriptor ${JSON.stringify(d.kind)} (known: ${DESCRIPTOR_KINDS.join(', ')})` });
  else {
    if (typeof d.path !== 'string' || !d.path.startsWith('/')) issues.push({ path: 'descriptor.path', message: 'an absolute path on the executor, e.g. /run' });
    const l = launchSchema.safeParse(d.launch);
    if (!l.success) for (const i of l.error.issues) issues.push({ path: `descriptor.launch.${i.path.join('.')}`, message: i.message });
  }
  if (issues.length) throw new ValidationError('registry file', issues);
  const toJson = (schema: z.ZodType, path: string) => {
    try {
      return z.toJSONSchema(schema, { io: 'input' });
    } catch (e) {
      throw new ValidationError('registry file', [{ path, message: `cannot be expressed as JSON Schema: ${(e as Error).message}` }]);
    }
  };
  return {
    name: s.name,
    className: s.className,
    configSchema: toJson(s.config, 'config'),
    inputSchema: toJson(s.input, 'input'),
    outputSchema: toJson(s.output, 'output'),
    descriptor: { kind: 'http-json', path: d!.path!, launch: launchSchema.parse(d!.launch) },
  };
}

/** A placeholder of the output's shape for record time (the real output arrives at replay). */
function placeholder(schema: Record<string, unknown> | undefined): unknown {
  if (!schema) return null;
  if ('default' in schema) return schema.default;
  switch (schema.type) {
    case 'object':
      return Object.fromEntries(Object.entries((schema.properties ?? {}) as Record<string, Record<string, unknown>>).map(([k, v]) => [k, placeholder(v)]));
    case 'array': return [];
    case 'string': return '';
    case 'number': case 'integer': return 0;
    case 'boolean': return false;
    default: return null;
  }
}

const built = new Map<string, { digest: string; cls: UnitTaskClass }>();

/**
 * The task class of a definition, registered for taskFromJSON (the same class again for an equal definition, so
 * `instanceof` and sharing keep working). Throws when another class already has that name.
 */
export function unitTaskClassFrom(def: TaskDefinitionJSON): UnitTaskClass {
  const digest = canonicalJson(def);
  const known = built.get(def.className);
  if (known?.digest === digest) return known.cls;
  if (known || getTaskClass(def.className)) throw new Error(`another unit task class is already registered as ${def.className}`);
  const configSchema = z.fromJSONSchema(def.configSchema as never) as unknown as z.ZodObject<z.ZodRawShape>;
  const inputSchema = z.fromJSONSchema(def.inputSchema as never);
  const outputSchema = z.fromJSONSchema(def.outputSchema as never);
  const record = placeholder(def.outputSchema as Record<string, unknown>);
  const cls = class extends UnitTask {
    static override readonly configSchema = configSchema;
    readonly inputSchema = inputSchema;
    readonly outputSchema = outputSchema;
    get name(): string {
      return def.name;
    }
    makeRecordOutput(): unknown {
      return structuredClone(record);
    }
  };
  Object.defineProperty(cls, 'name', { value: def.className });
  Object.defineProperty(cls, 'definition', { value: def });
  registerTaskClass(cls as unknown as UnitTaskClass);
  built.set(def.className, { digest, cls: cls as unknown as UnitTaskClass });
  return cls as unknown as UnitTaskClass;
}

/** Forgets a registered definition's class (after it was removed from the registry). */
export function forgetUnitTaskClass(className: string): void {
  if (built.delete(className)) unregisterTaskClass(className);
}
