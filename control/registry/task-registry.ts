/**
 * TaskRegistry: user-defined unit tasks registered at run time (docs/registry.md).
 *
 * register(source): the source is checked in a throwaway process (checkTaskSource: user code never runs here),
 * which answers the task's definition as JSON. The definition is stored (idempotent when equal, a conflict when
 * different) and installed in this process: the task class rebuilt from JSON (taskFromJSON, the dispatcher and
 * the resource manager find it), its declarative descriptor registered, and a module written to `dir`
 * (`<name>.mjs`) that apps import as `cornserve/registry/<name>` (the check process and the app functions get
 * `dir` as CORNSERVE_REGISTRY_DIR). Store change notifications install (and forget) definitions other processes
 * registered.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import { CornserveError, canonicalJson, forgetUnitTaskClass, unitTaskClassFrom, type TaskDefinitionJSON } from '../../functions/sdk/index.js';
import { REGISTRY_DIR_ENV } from '../../functions/runtime/load.js';
import type { TaskCheckResult } from '../../functions/runtime/check.js';
import type { Logger } from '../../lib/log.js';
import { ownedName } from '../../lib/temp-dirs.js';
import { Mutex } from '../resources/mutex.js';
import { registerDescriptor, unregisterDescriptors } from '../descriptors/registry.js';
import { httpJsonDescriptor } from '../descriptors/http-json.js';
import { REPO_ROOT } from '../gateway/paths.js';
import type { Store, TaskDefinitionRecord } from '../store/index.js';
import type { Platform } from '../../lib/platform.js';

/** Where definitions are mirrored besides the Store (the Kubernetes platform's custom resources). */
export type TaskDefinitionMirror = Required<Pick<Platform, 'storeTaskDefinition' | 'removeTaskDefinition'>>;

export const REGISTRY_DIR_PREFIX = 'cornserve-registry-';
const SDK_URL = pathToFileURL(join(REPO_ROOT, 'functions/sdk/index.ts')).href;

export class TaskRegistrationError extends CornserveError {
  constructor(problems: string[]) {
    super('TASK_REGISTRATION_FAILED', `the unit task could not be registered: ${problems.join('; ')}`, 422, { problems });
  }
}

export class TaskDefinitionConflictError extends CornserveError {
  constructor(name: string) {
    super('TASK_DEFINITION_CONFLICT', `a different unit task named ${name} is already registered; remove it first (cornserve tasks unregister ${name})`, 409);
  }
}

export class TaskDefinitionInUseError extends CornserveError {
  constructor(name: string, taskIds: string[]) {
    super('TASK_DEFINITION_IN_USE', `unit task ${name} is in use by deployed tasks ${taskIds.join(', ')}; unregister the apps and sessions using it first`, 409, { taskIds });
  }
}

export class TaskDefinitionNotFoundError extends CornserveError {
  constructor(name: string) {
    super('TASK_DEFINITION_NOT_FOUND', `no unit task named ${name} is registered`, 404);
  }
}

export interface TaskRegistryOptions {
  store: Store;
  log: Logger;
  /** How sources are checked (the gateway's checkTaskSource). Absent: this process only follows the Store (resource manager, dispatcher). */
  check?: (source: string) => Promise<TaskCheckResult>;
  /** @default a fresh folder under the OS temp dir */
  dir?: string;
}

export const definitionDigest = (def: TaskDefinitionJSON) => createHash('sha256').update(canonicalJson(def)).digest('hex');

export class TaskRegistry {
  readonly dir: string;
  readonly #installed = new Map<string, TaskDefinitionRecord>();
  /** Installs and removals one at a time (a register and the change notification it causes race otherwise). */
  readonly #lock = new Mutex();
  #unsubscribe: (() => void) | undefined;
  #mirror: TaskDefinitionMirror | undefined;

  constructor(private readonly opts: TaskRegistryOptions) {
    this.dir = opts.dir ?? join(tmpdir(), ownedName(REGISTRY_DIR_PREFIX) + Date.now().toString(36));
  }

  /** Installs every stored definition, follows changes, and points the check process and app functions at `dir`. */
  async start(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    process.env[REGISTRY_DIR_ENV] = this.dir;
    this.#unsubscribe = this.opts.store.subscribe((change) => {
      if (change.kind === 'task-definition') void this.sync().catch((err) => this.opts.log.error({ err }, 'syncing the task registry failed'));
    });
    await this.sync();
  }

  /** Makes this process's installed definitions match the Store's. */
  sync(): Promise<void> {
    return this.#lock.run(() => this.#sync());
  }

  async #sync(): Promise<void> {
    const stored = new Map((await this.opts.store.listTaskDefinitions()).map((d) => [d.name, d]));
    for (const name of [...this.#installed.keys()]) if (stored.get(name)?.digest !== this.#installed.get(name)!.digest) await this.#uninstall(name);
    for (const d of stored.values()) if (!this.#installed.has(d.name)) await this.#install(d);
  }

  /**
   * From now on, every definition this process installs (or forgets) is also written to (removed from) `mirror`;
   * the ones installed already are written now. The resource manager mirrors to its Kubernetes platform: it
   * follows every registration through the Store, whichever gateway took it.
   */
  async mirrorTo(mirror: TaskDefinitionMirror): Promise<void> {
    await this.#lock.run(async () => {
      this.#mirror = mirror;
      for (const record of this.#installed.values()) await this.#mirrorPut(record);
    });
  }

  // A mirror that fails is logged, not fatal: the Store is the source of truth and the next change retries.
  async #mirrorPut(record: TaskDefinitionRecord): Promise<void> {
    try {
      await this.#mirror?.storeTaskDefinition(record);
    } catch (err) {
      this.opts.log.error({ err, task: record.name }, 'mirroring the unit task definition failed');
    }
  }

  async #mirrorRemove(name: string): Promise<void> {
    try {
      await this.#mirror?.removeTaskDefinition(name);
    } catch (err) {
      this.opts.log.error({ err, task: name }, 'removing the mirrored unit task definition failed');
    }
  }

  list(): TaskDefinitionRecord[] {
    return [...this.#installed.values()];
  }

  async register(source: string): Promise<{ record: TaskDefinitionRecord; created: boolean }> {
    if (!this.opts.check) throw new Error('this process follows the task registry; registering happens at the gateway');
    const checked = await this.opts.check(source);
    if (!checked.ok) throw new TaskRegistrationError(checked.problems);
    const def = checked.definition;
    const record: TaskDefinitionRecord = { name: def.name, className: def.className, digest: definitionDigest(def), definition: def, source, registeredAt: Date.now() };
    const clash = this.list().find((d) => d.className === def.className && d.name !== def.name);
    if (clash) throw new TaskRegistrationError([`className ${def.className} is already used by unit task ${clash.name}`]);
    // Under the lock: the Store's change notification of this very put must not install it a second time.
    return this.#lock.run(async () => {
      const outcome = await this.opts.store.putTaskDefinition(record);
      if (outcome === 'conflict') throw new TaskDefinitionConflictError(def.name);
      if (outcome === 'created') {
        try {
          await this.#install(record);
        } catch (e) {
          await this.opts.store.deleteTaskDefinition(def.name);
          throw new TaskRegistrationError([(e as Error).message]);
        }
        this.opts.log.info({ task: def.name, className: def.className }, 'unit task registered');
      } else if (!this.#installed.has(def.name)) await this.#sync();
      return { record: this.#installed.get(def.name) ?? record, created: outcome === 'created' };
    });
  }

  /** Removes a definition no deployed task uses (409 otherwise). */
  async remove(name: string): Promise<void> {
    const record = (await this.opts.store.listTaskDefinitions()).find((d) => d.name === name);
    if (!record) throw new TaskDefinitionNotFoundError(name);
    const inUse = (await this.opts.store.listTasks()).filter((t) => t.taskClass === record.className).map((t) => t.taskId);
    if (inUse.length) throw new TaskDefinitionInUseError(name, inUse);
    await this.#lock.run(async () => {
      await this.opts.store.deleteTaskDefinition(name);
      await this.#uninstall(name);
    });
    this.opts.log.info({ task: name }, 'unit task removed');
  }

  async close(): Promise<void> {
    this.#unsubscribe?.();
    await rm(this.dir, { recursive: true, force: true });
  }

  async #install(record: TaskDefinitionRecord): Promise<void> {
    const def = record.definition as TaskDefinitionJSON;
    unitTaskClassFrom(def);
    registerDescriptor(httpJsonDescriptor(def));
    const module = [
      `import { unitTaskClassFrom } from ${JSON.stringify(SDK_URL)};`,
      `export const definition = ${JSON.stringify(def)};`,
      `export const ${def.className} = unitTaskClassFrom(definition);`,
      `export default ${def.className};`,
      '',
    ].join('\n');
    await writeFile(join(this.dir, `${def.name}.mjs`), module);
    this.#installed.set(record.name, record);
    await this.#mirrorPut(record);
  }

  async #uninstall(name: string): Promise<void> {
    const record = this.#installed.get(name);
    if (!record) return;
    this.#installed.delete(name);
    forgetUnitTaskClass(record.className);
    unregisterDescriptors(record.className);
    await rm(join(this.dir, `${name}.mjs`), { force: true });
    await this.#mirrorRemove(name);
  }
}
