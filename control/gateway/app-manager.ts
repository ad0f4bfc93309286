/**
 * AppManager: registration, unregistration, lookup and recovery of apps.
 *
 * register() is transactional: validate the source in a throwaway process -> rebuild its unit tasks from
 * JSON (built-in task classes only; no user code here) -> store the app ('not ready') -> deploy the unit
 * tasks through the resource manager (all or nothing) -> start the app function and wait for its health ->
 * 'ready'. Any failure undoes every step taken (tasks released, function stopped, app removed) and is
 * reported as one `error` event naming the problem.
 *
 * Every invocation holds a ticket (admit()) while it runs. unregister() and shutdown() drain: new requests get a
 * 503 (APP_UNREGISTERING / SHUTTING_DOWN), the ones in flight get `drainTimeoutMs` to finish, what is left then is
 * cut with that same error (a final error line on a stream), and only then is anything torn down.
 */
import {
  APP_NAME_PATTERN,
  isCornserveError,
  randomHex,
  taskFromJSON,
  type UnitTask,
} from '../../functions/sdk/index.js';
import '../../functions/tasks/index.js'; // registers the built-in task classes for taskFromJSON
import type { CheckedUnitTask, CheckResult } from '../../functions/runtime/check.js';
import { DEFAULT_TARGET_IN_FLIGHT } from '../../policies/autoscaler.js';
import { descriptorFor } from '../descriptors/registry.js';
import type { DeployProgress, ResourceManagerApi } from '../resources/types.js';
import { StoreConflictError, taskIdOf, type AppRecord, type AppState, type Store } from '../store/index.js';
import type { Logger } from '../../lib/log.js';
import { withSpan } from '../../lib/telemetry.js';
import type { AppFunctions, FunctionState } from './app-functions.js';
import { AppNotFoundError, AppNotReadyError, AppUnregisteringError, RegistrationError, ShuttingDownError } from './errors.js';
import { DEFAULT_DRAIN_TIMEOUT_MS, InFlight, type Ticket } from './in-flight.js';
import { checkAppSource } from './source-check.js';

export type RegistrationEvent =
  | { type: 'initial'; app_id: string; task_names: string[] }
  | { type: 'progress'; task: string; task_id: string; state: string }
  | { type: 'final'; app_id: string; message: string }
  | { type: 'error'; message: string };

export interface RegisterRequest {
  source: string;
  /** Overrides the name given to defineApp. */
  name?: string;
  alias?: string;
  /** The file the source came from (its base name), so the check's problems name it (`chat.ts:7:1`). */
  fileName?: string;
}

export interface AppManagerOptions {
  store: Store;
  resources: ResourceManagerApi;
  functions: AppFunctions;
  log: Logger;
  /** @default checkAppSource (a throwaway runtime process) */
  checkSource?: (source: string, fileName?: string) => Promise<CheckResult>;
  /** How long unregister() and shutdown() let in-flight requests finish before cutting them. @default 30 s */
  drainTimeoutMs?: number;
}

/** After a cut, how long to wait for the cut replies to be written before tearing down anyway. */
const CUT_SETTLE_MS = 5_000;

/** A registration that passed its up-front checks and holds its name: `deploy` it next. */
export interface PreparedRegistration {
  record: AppRecord;
  tasks: UnitTask[];
  taskNames: string[];
  /** Each unit task's autoscaling default from the app (defineApp autoscaling), by position. */
  autoscaling: Array<CheckedUnitTask['autoscaling']>;
}

/** What invocations need to know about an app, kept in memory (the Store has the full record). */
export interface AppEntry {
  appId: string;
  name: string;
  aliases: string[];
  taskIds: string[];
  state: AppState;
  /** From the source check (at registration, and again when the app is recovered after a restart). */
  requestExample?: unknown;
  /** With the optional fields filled in too. */
  requestExampleFull?: unknown;
  requestFields?: string;
}

const messageOf = (e: unknown) => (isCornserveError(e) || e instanceof Error ? e.message : String(e));

/** The app's autoscaling defaults (defineApp autoscaling) for its unit tasks; a platform without autoscaling ignores them. */
async function applyAppAutoscaling(resources: ResourceManagerApi, ids: string[], defaults: Array<CheckedUnitTask['autoscaling']>): Promise<void> {
  for (const [i, a] of defaults.entries()) {
    if (!a) continue;
    const policy = a.sloMs !== undefined ? { min: a.min, max: a.max, sloMs: a.sloMs } : { min: a.min, max: a.max, target: a.target ?? DEFAULT_TARGET_IN_FLIGHT };
    try {
      await resources.setAutoscale(ids[i]!, policy, 'app');
    } catch (e) {
      if ((e as { code?: unknown }).code === 'AUTOSCALING_OFF') return;
      throw e;
    }
  }
}

/** The in-flight key of POST /tasks/invoke (no app id looks like it: those are `app-<hex>`). */
const TASK_GRAPH_KEY = 'POST /tasks/invoke';

export class AppManager {
  readonly #apps = new Map<string, AppEntry>();
  readonly #names = new Map<string, string>();
  readonly #inFlight = new InFlight();
  readonly #unregistering = new Set<string>();
  #stopping = false;

  constructor(private readonly opts: AppManagerOptions) {}

  /** True once shutdown() began: the gateway answers every new request 503 SHUTTING_DOWN. */
  get stopping(): boolean {
    return this.#stopping;
  }

  /**
   * Lets one invocation of `entry` in (503 while it is being unregistered or the gateway stops); the caller ends
   * the ticket when its response closes and passes the ticket's signal to the proxy (a cut aborts it).
   */
  admit(entry: AppEntry): Ticket {
    if (this.#stopping) throw new ShuttingDownError();
    if (this.#unregistering.has(entry.appId)) throw new AppUnregisteringError(entry.name);
    return this.#inFlight.begin(entry.appId);
  }

  /**
   * Lets one direct task-graph invocation (POST /tasks/invoke) in, counted with the apps' requests: shutdown waits for
   * it (bounded) and then cuts it like them. 503 SHUTTING_DOWN once the gateway stops.
   */
  admitTaskGraph(): Ticket {
    if (this.#stopping) throw new ShuttingDownError();
    return this.#inFlight.begin(TASK_GRAPH_KEY);
  }

  /** True while unregister() drains the app. */
  unregistering(appId: string): boolean {
    return this.#unregistering.has(appId);
  }

  /** Cuts the in-flight invocations of every app that uses one of `taskIds` (with `reason` as their reply); returns how many. */
  cutUsing(taskIds: ReadonlySet<string>, reason: Error): number {
    let n = 0;
    for (const app of this.#apps.values()) if (app.taskIds.some((id) => taskIds.has(id))) n += this.#inFlight.cut(app.appId, reason);
    return n;
  }

  /** Invocations in flight (of one app, or all). */
  inFlight(appId?: string): number {
    return this.#inFlight.count(appId);
  }

  /** The app an id, name or alias names. */
  resolve(idOrName: string): AppEntry {
    const entry = this.#apps.get(idOrName) ?? this.#apps.get(this.#names.get(idOrName) ?? '');
    if (!entry) throw new AppNotFoundError(idOrName);
    return entry;
  }

  entries(): AppEntry[] {
    return [...this.#apps.values()];
  }

  async list(): Promise<Record<string, AppState>> {
    const apps = await this.opts.store.listApps();
    return Object.fromEntries(apps.map((a) => [a.appId, a.state]));
  }

  async details(): Promise<Array<{ app_id: string; name: string; aliases: string[]; state: AppState; task_ids: string[] }>> {
    const apps = await this.opts.store.listApps();
    return apps.map((a) => ({ app_id: a.appId, name: a.name, aliases: a.aliases, state: a.state, task_ids: a.taskIds }));
  }

  /** Mirrors the app function's state into the app's state (a restarting function makes the app 'not ready'). */
  onFunctionState(appId: string, state: FunctionState): void {
    const entry = this.#apps.get(appId);
    if (!entry || state === 'stopped' || state === 'starting') return;
    const appState: AppState = state === 'ready' ? 'ready' : 'not ready';
    if (entry.state === appState) return;
    entry.state = appState;
    this.opts.store.setAppState(appId, appState).catch((err) => this.opts.log.warn({ err, appId }, 'cannot record the app state'));
  }

  /** Runs a registration to its end; every outcome is reported through `emit` (it never throws). */
  async register(req: RegisterRequest, emit: (e: RegistrationEvent) => void): Promise<void> {
    let prepared: PreparedRegistration;
    try {
      prepared = await this.prepare(req);
    } catch (e) {
      emit({ type: 'error', message: messageOf(e) });
      return;
    }
    await this.deploy(prepared, emit);
  }

  /**
   * The up-front part of a registration, before any event: the source check, the name and alias, the unit
   * tasks, and the app record (a taken name fails here). Throws a RegistrationError (4xx) naming the problem;
   * nothing is left behind then. The route answers that error as an HTTP status before its event stream starts.
   */
  async prepare(req: RegisterRequest): Promise<PreparedRegistration> {
    try {
      return await this.#prepare(req);
    } catch (e) {
      this.opts.log.info({ err: e }, 'registration refused');
      throw e;
    }
  }

  /** Deploys a prepared registration; every outcome is reported through `emit` (it never throws). */
  async deploy(prepared: PreparedRegistration, emit: (e: RegistrationEvent) => void): Promise<void> {
    await withSpan('gateway.register_app', async (span) => {
      span.setAttribute('cornserve.app_id', prepared.record.appId);
      try {
        await this.#deploy(prepared, emit);
      } catch (e) {
        this.opts.log.info({ err: e }, 'registration failed');
        emit({ type: 'error', message: messageOf(e) });
      }
    }).catch(() => {});
  }

  async #prepare(req: RegisterRequest): Promise<PreparedRegistration> {
    const { store } = this.opts;
    const check = await (this.opts.checkSource ?? checkAppSource)(req.source, req.fileName);
    if (!check.ok) throw new RegistrationError(`App source code validation failed: ${check.problems.join('; ')}`, check.problems);
    const name = req.name ?? check.name;
    if (!APP_NAME_PATTERN.test(name)) throw new RegistrationError(`app name ${JSON.stringify(name)} must match ${APP_NAME_PATTERN}`);
    if (req.alias !== undefined && (!APP_NAME_PATTERN.test(req.alias) || req.alias.startsWith('app-')))
      throw new RegistrationError(`alias ${JSON.stringify(req.alias)} must match ${APP_NAME_PATTERN} and not start with "app-"`);
    const tasks = check.unit_tasks.map((t) => rebuildTask(t.task_class, t.task));
    const taskNames = tasks.map((t) => descriptorFor(t).executorName(t));
    const taskIds = tasks.map(taskIdOf);

    const appId = `app-${randomHex()}`;
    const record: AppRecord = { appId, name, aliases: req.alias ? [req.alias] : [], source: req.source, taskIds, state: 'not ready', createdAt: Date.now() };
    try {
      await store.putApp(record);
    } catch (e) {
      if (e instanceof StoreConflictError) throw new RegistrationError(`cannot register ${name}: ${e.message}; unregister it first or pass another name`, undefined, 409);
      throw e;
    }
    this.#remember(record);
    this.#setRequestInfo(appId, check);
    return { record, tasks, taskNames, autoscaling: check.unit_tasks.map((u) => u.autoscaling) };
  }

  async #deploy({ record, tasks, taskNames, autoscaling }: PreparedRegistration, emit: (e: RegistrationEvent) => void): Promise<string> {
    const { store, resources, functions } = this.opts;
    const { appId, name, taskIds, source } = record;
    emit({ type: 'initial', app_id: appId, task_names: taskNames });

    let deployed = false;
    try {
      const reported = new Set<string>();
      const onProgress = (p: DeployProgress) => {
        if ((p.state === 'ready' || p.state === 'shared') && !reported.has(p.taskId)) {
          reported.add(p.taskId);
          emit({ type: 'progress', task: taskNames[taskIds.indexOf(p.taskId)] ?? p.task, task_id: p.taskId, state: p.state });
        }
      };
      const ids = await resources.deploy(tasks, onProgress);
      deployed = true;
      ids.forEach((id, i) => {
        if (!reported.has(id)) emit({ type: 'progress', task: taskNames[i]!, task_id: id, state: 'ready' });
      });
      if (ids.some((id, i) => id !== taskIds[i])) await store.putApp({ ...record, taskIds: ids });
      await applyAppAutoscaling(resources, ids, autoscaling);
      await functions.start({ appId, name, source });
      await store.setAppState(appId, 'ready');
      this.#apps.get(appId)!.state = 'ready';
      this.#apps.get(appId)!.taskIds = ids;
    } catch (e) {
      await this.#undo(appId, deployed ? taskIds : []);
      throw new RegistrationError(`registration of ${name} failed and was rolled back: ${messageOf(e)}`);
    }
    emit({ type: 'final', app_id: appId, message: `Successfully deployed ${tasks.length} unit task${tasks.length === 1 ? '' : 's'}` });
    return appId;
  }

  async #undo(appId: string, taskIds: string[]): Promise<void> {
    const steps = await Promise.allSettled([
      this.opts.functions.stop(appId),
      taskIds.length ? this.opts.resources.release(taskIds) : Promise.resolve(),
    ]);
    for (const s of steps) if (s.status === 'rejected') this.opts.log.error({ err: s.reason, appId }, 'rollback step failed');
    this.#forget(appId);
    await this.opts.store.deleteApp(appId).catch((err) => this.opts.log.error({ err, appId }, 'cannot remove the app record'));
  }

  /**
   * Drains the app (new requests 503 APP_UNREGISTERING; in-flight ones get the drain grace, then are cut), then
   * stops its function, removes it and releases its unit tasks (torn down when no other app uses them).
   */
  async unregister(idOrName: string, opts: { drainTimeoutMs?: number } = {}): Promise<AppEntry> {
    const entry = this.resolve(idOrName);
    if (this.#unregistering.has(entry.appId)) throw new AppUnregisteringError(entry.name);
    if (entry.state !== 'ready' && this.opts.functions.state(entry.appId) === undefined) throw new AppNotReadyError(entry.name);
    this.#unregistering.add(entry.appId);
    try {
      return await withSpan('gateway.unregister_app', async () => {
        await this.#drain(entry.appId, `app ${entry.name}`, opts.drainTimeoutMs, (ms) => new AppUnregisteringError(entry.name, ms));
        this.#forget(entry.appId);
        await this.opts.store.deleteApp(entry.appId);
        await this.opts.functions.stop(entry.appId);
        await this.opts.resources.release(entry.taskIds);
        this.opts.log.info({ appId: entry.appId, app: entry.name, taskIds: entry.taskIds }, `app ${entry.name} unregistered: its function is stopped and its unit tasks released`);
        return entry;
      }, { 'cornserve.app_id': entry.appId });
    } finally {
      this.#unregistering.delete(entry.appId);
    }
  }

  /**
   * The gateway is going away: every new request gets 503 SHUTTING_DOWN from now on; the invocations in flight
   * get the drain grace, then are cut with SHUTTING_DOWN. Resolves once none is left (or the cut settled).
   */
  async shutdown(): Promise<void> {
    this.#stopping = true;
    await this.#drain(undefined, 'the gateway', undefined, (ms) => new ShuttingDownError(ms));
  }

  /** Waits (bounded) for the requests of `appId` (all, when undefined) to finish, then cuts the rest with `cutError`. */
  async #drain(appId: string | undefined, what: string, drainTimeoutMs: number | undefined, cutError: (graceMs: number) => Error): Promise<void> {
    const graceMs = drainTimeoutMs ?? this.opts.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
    const inFlight = this.#inFlight.count(appId);
    if (inFlight === 0) return;
    this.opts.log.info({ appId, inFlight, graceMs }, `${what}: waiting up to ${graceMs} ms for ${inFlight} in-flight request(s) to finish`);
    const left = await this.#inFlight.idle(appId, Date.now() + graceMs);
    if (left === 0) return void this.opts.log.info({ appId, drained: inFlight }, `${what}: every in-flight request finished`);
    const cut = this.#inFlight.cut(appId, cutError(graceMs));
    this.opts.log.warn({ appId, finished: inFlight - left, cut, graceMs }, `${what}: ${cut} request(s) still in flight after ${graceMs} ms were cut with an error reply`);
    const stuck = await this.#inFlight.idle(appId, Date.now() + CUT_SETTLE_MS);
    if (stuck) this.opts.log.warn({ appId, stuck }, `${what}: ${stuck} cut request(s) did not close within ${CUT_SETTLE_MS} ms; going on`);
  }

  /**
   * After a restart on a persistent Store (the resource manager recovered first): every stored app gets its
   * function back. An app whose unit tasks are gone cannot serve, so it is removed and its tasks released.
   */
  async recover(): Promise<void> {
    const apps = await this.opts.store.listApps();
    await Promise.all(apps.map(async (app) => {
      const tasks = await Promise.all(app.taskIds.map((id) => this.opts.store.getTask(id)));
      const missing = app.taskIds.filter((_, i) => !tasks[i] || tasks[i]!.state === 'failed' || tasks[i]!.state === 'tearing down');
      this.#remember({ ...app, state: 'not ready' });
      try {
        if (missing.length) throw new Error(`its unit tasks ${missing.join(', ')} are gone`);
        await this.opts.store.setAppState(app.appId, 'not ready');
        await this.opts.functions.start({ appId: app.appId, name: app.name, source: app.source });
        // The check runs the source in a throwaway process, never here; it gives back the request example
        // (the OpenAI route lists chat apps by it).
        const check = await (this.opts.checkSource ?? checkAppSource)(app.source);
        if (check.ok) this.#setRequestInfo(app.appId, check);
        await this.opts.store.setAppState(app.appId, 'ready');
        this.#apps.get(app.appId)!.state = 'ready';
        this.opts.log.info({ appId: app.appId, name: app.name }, 'app recovered');
      } catch (err) {
        this.opts.log.error({ err, appId: app.appId }, 'cannot recover the app; removing it');
        await this.#undo(app.appId, app.taskIds.filter((id) => !missing.includes(id)));
      }
    }));
  }

  /**
   * After the store lost its data (control/store/watch.ts): every app served here whose record is gone is forgotten
   * and its function stopped, so nothing keeps serving an app the store no longer knows and it can be registered
   * again. Its unit tasks are the resource manager's to reconcile. Idempotent; returns the names of the apps stopped.
   */
  async reconcile(): Promise<string[]> {
    const stopped: string[] = [];
    for (const entry of this.entries()) {
      if (this.#unregistering.has(entry.appId) || (await this.opts.store.getApp(entry.appId))) continue;
      this.#forget(entry.appId);
      await this.opts.functions.stop(entry.appId);
      this.opts.log.warn({ appId: entry.appId, app: entry.name }, `app ${entry.name} is no longer in the store: its function was stopped (register it again to serve it)`);
      stopped.push(entry.name);
    }
    return stopped;
  }

  #setRequestInfo(appId: string, check: Extract<CheckResult, { ok: true }>): void {
    Object.assign(this.#apps.get(appId)!, { requestExample: check.request_example, requestExampleFull: check.request_example_full, requestFields: check.request_fields });
  }

  #remember(app: Pick<AppRecord, 'appId' | 'name' | 'aliases' | 'taskIds' | 'state'>): void {
    this.#apps.set(app.appId, { appId: app.appId, name: app.name, aliases: [...app.aliases], taskIds: [...app.taskIds], state: app.state });
    for (const n of [app.name, ...app.aliases]) this.#names.set(n, app.appId);
  }

  #forget(appId: string): void {
    const entry = this.#apps.get(appId);
    if (!entry) return;
    this.#apps.delete(appId);
    for (const n of [entry.name, ...entry.aliases]) if (this.#names.get(n) === appId) this.#names.delete(n);
  }
}

function rebuildTask(taskClass: string, json: unknown): UnitTask {
  try {
    return taskFromJSON(taskClass, json as Parameters<typeof taskFromJSON>[1]);
  } catch (e) {
    throw new RegistrationError(`unit task ${taskClass} cannot be deployed: ${messageOf(e)} (apps can use the platform's task classes only)`);
  }
}
