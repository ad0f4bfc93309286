/**
 * The resource manager: owns the device inventory, keeps one TaskManager per distinct unit task, deploys
 * transactionally (all of a call's tasks or none), tears a task down when its usage reaches 0, scales on
 * request, and on start brings back every task the Store knows (recover()).
 *
 * State lives in the Store (task records with usage and devices, the inventory, executor routes); this
 * object adds the live TaskManagers. Concurrency: one async mutex per task id (deploy / release / scale /
 * recover of the same task never interleave, so concurrent deploys of apps sharing a task are safe) and one
 * for the inventory (allocations never race). A task lock is never taken while holding the inventory lock.
 */
import type { UnitTask } from '../../functions/sdk/index.js';
import { descriptorFor } from '../descriptors/registry.js';
import type { LaunchSpec, TaskDescriptor } from '../../lib/descriptor.js';
import type { Platform } from '../../lib/platform.js';
import type { AutoscaleRecord, DeviceRef, ExecutorRoute, Store, UnitTaskRecord } from '../../lib/store.js';
import { TaskManager, type TaskManagerOptions } from '../taskmanager/manager.js';
import { runProfile, type ProfileRunResult } from '../taskmanager/profiler-run.js';
import type { ProfilerOptions } from '../taskmanager/profiler.js';
import type { TaskProfile } from '../../lib/autoscale.js';
import { logger } from '../../lib/log.js';
import {
  allocate,
  allocateChunks,
  buildInventory,
  claimDevices,
  devicesOf,
  freeCount,
  freeDevices,
  freeOwner,
  type Inventory,
} from '../../policies/allocation.js';
import {
  AutoscalingOffError,
  DeployError,
  InvalidAutoscaleError,
  InvalidPlanError,
  InvalidScaleError,
  ResourceManagerClosedError,
  ScaleBelowMinimumError,
  TaskNotFoundError,
  TaskNotReadyError,
} from '../../lib/resource-errors.js';
import { KeyedMutex, Mutex } from './mutex.js';
import { AutoscaleLoop, type AutoscaleLoopOptions } from './autoscale-loop.js';
import { CapacitySource } from '../autoscaler/capacity-source.js';
import type { AutoscalePolicy } from '../../lib/autoscale.js';
import { newTaskRecord, taskFromRecord as defaultTaskFromRecord } from './task-records.js';
import { taskIdOf } from '../store/task-id.js';
import type { DeployProgress, PlanTarget, ResourceManagerApi, TaskStatus } from './types.js';

export interface ResourceManagerOptions {
  store: Store;
  platform: Platform;
  /** @default descriptorFor (the registry) */
  descriptors?: (task: UnitTask) => TaskDescriptor;
  /** Bound on one executor's start. @default 60000 */
  healthTimeoutMs?: number;
  /** How long a removed executor may finish its in-flight requests. @default 30000 */
  drainGraceMs?: number;
  /** Recorded in the inventory per node. */
  sidecarUrls?: Record<string, string>;
  /** Extra environment for every executor. */
  executorEnv?: Record<string, string>;
  /** Further task-manager settings (restart backoff, poll intervals). */
  taskManager?: Partial<Omit<TaskManagerOptions, 'taskId' | 'executorName' | 'launch' | 'store' | 'platform'>>;
  /** adopt(): bound on the health check of an executor found running. @default 10000 */
  adoptHealthTimeoutMs?: number;
  /** Rebuilds a task from its record (recovery, adoption). @default the unit-task class registry */
  taskFromRecord?: (record: UnitTaskRecord) => UnitTask;
  /** The device kind profiles are stored under. @default 'cpu' on the local platform (virtual devices), 'gpu' on Kubernetes */
  deviceKind?: string;
  /** Profiling runs (POST /task/profile); tests shorten the windows. */
  profiler?: Omit<ProfilerOptions, 'signal' | 'onPoint'>;
  /** Autoscale the tasks (AutoscaleLoop, started by init()); absent = manual scaling only. */
  autoscale?: AutoscaleLoopOptions;
}

interface Managed {
  tm: TaskManager;
  name: string;
  launch: LaunchSpec;
}

export interface RecoveryReport {
  recovered: string[];
  removed: string[];
  failed: Array<{ taskId: string; error: string }>;
}

export interface AdoptOptions {
  /**
   * Executors the platform has just (re)created for their routes (Kubernetes: reconcile's `created`): they are
   * waited for like a start (healthTimeoutMs) instead of the shorter adoption bound.
   */
  startedExecutors?: Iterable<string>;
}

export interface AdoptionReport {
  /** Tasks taken over with at least one of their running executors. */
  adopted: string[];
  /** Executors kept as they were (healthy; not restarted). */
  kept: string[];
  /** Executors that were gone or unhealthy and were restarted (or wait for a retry, see TaskManager). */
  restarted: string[];
  /** Routes dropped: draining when the previous manager stopped, or devices that do not fit. */
  dropped: string[];
  /** Tasks with no executor left to adopt: brought up again as recover() does. */
  recovered: string[];
  /** Tasks nobody uses any more: torn down. */
  removed: string[];
  failed: Array<{ taskId: string; error: string }>;
}

const log = logger('resources');

export class ResourceManager implements ResourceManagerApi {
  private readonly managed = new Map<string, Managed>();
  /** Nodes whose sidecar is down (setSidecarState). */
  private readonly sidecarsDown = new Set<string>();
  private readonly taskLocks = new KeyedMutex();
  private readonly inventoryLock = new Mutex();
  /** One plan applied at a time. */
  private readonly planLock = new Mutex();
  private inventory: Inventory = [];
  private initPromise: Promise<void> | undefined;
  private closed = false;
  private readonly descriptorOf: (task: UnitTask) => TaskDescriptor;
  private readonly taskFromRecord: (record: UnitTaskRecord) => UnitTask;
  /** The autoscaling loop, when on. */
  readonly autoscaling: AutoscaleLoop | undefined;
  /** Where the autoscaler's capacity figures come from (profiles + live stats), when autoscaling is on. */
  private readonly capacitySource: CapacitySource | undefined;

  constructor(private readonly opts: ResourceManagerOptions) {
    this.descriptorOf = opts.descriptors ?? descriptorFor;
    this.taskFromRecord = opts.taskFromRecord ?? defaultTaskFromRecord;
    if (opts.autoscale) {
      // Capacity per executor from the task's profile and its executors' live service times (the Store), unless
      // the caller brings its own; tasks with neither fall back to the autoscaler's Little's-law default.
      // The executors' concurrency limit comes from the loop's GET /load readings (read lazily: the loop is built next).
      if (!opts.autoscale.capacity) {
        this.capacitySource = new CapacitySource(opts.store, { deviceKind: this.deviceKind(), concurrencyLimitOf: (taskId) => this.autoscaling?.concurrencyLimitOf(taskId), policyOf: (taskId) => this.autoscaling?.policyOf(taskId) });
      }
      this.autoscaling = new AutoscaleLoop(
        opts.store,
        {
          runningTasks: () => [...this.managed].map(([taskId, m]) => ({ taskId, executors: m.tm.executors().length, devicesPerExecutor: m.launch.devicesPerExecutor })),
          poolDevices: () => this.inventory.reduce((a, n) => a + n.devices.length, 0),
          freeDevices: () => freeCount(this.inventory),
          scaleExecutors: async (taskId, delta) => {
            const m = this.managed.get(taskId);
            if (!m) throw new TaskNotFoundError(taskId);
            await this.scaleDevices(taskId, delta * m.launch.devicesPerExecutor);
          },
        },
        this.capacitySource ? { ...opts.autoscale, capacity: this.capacitySource.provider } : opts.autoscale,
      );
    }
  }

  /** Builds the inventory from the platform's nodes, re-owning the devices the Store's tasks hold. Idempotent. */
  init(): Promise<void> {
    this.initPromise ??= (async () => {
      let inventory = buildInventory(await this.opts.platform.listNodes(), this.opts.sidecarUrls);
      for (const task of await this.opts.store.listTasks()) {
        try {
          inventory = claimDevices(inventory, task.devices, task.taskId);
        } catch (e) {
          log.warn({ task: task.taskId, err: (e as Error).message }, 'recorded devices are not available; they will be reallocated');
        }
      }
      await this.commitInventory(inventory);
      this.capacitySource?.start();
      this.autoscaling?.start();
    })().catch((e) => {
      this.initPromise = undefined;
      throw e;
    });
    return this.initPromise;
  }

  /** The inventory as this manager sees it (a copy). */
  currentInventory(): Inventory {
    return structuredClone(this.inventory);
  }

  async deploy(tasks: UnitTask[], onProgress: (p: DeployProgress) => void = () => {}): Promise<string[]> {
    this.assertOpen();
    await this.init();
    const ids = tasks.map(taskIdOf);
    const unique = [...new Map(tasks.map((t, i) => [ids[i]!, t])).entries()];
    const acquired: string[] = [];
    const results = await Promise.allSettled(unique.map(([taskId, task]) => this.acquire(taskId, task, onProgress, acquired)));
    const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure) {
      const undo = await this.releaseAll(acquired);
      if (undo.length) log.error({ errors: undo.map((e) => (e as Error).message) }, 'rollback of a failed deploy was incomplete');
      throw failure.reason;
    }
    return ids;
  }

  async release(taskIds: string[]): Promise<void> {
    await this.init();
    const errors = await this.releaseAll([...new Set(taskIds)]);
    if (errors.length) throw errors[0];
  }

  /**
   * Scaling by hand. With autoscaling on, the task turns manual (the loop leaves it alone) until
   * `setAutoscale` gives it a policy again.
   */
  async scale(taskId: string, deltaDevices: number): Promise<TaskStatus> {
    const status = await this.scaleDevices(taskId, deltaDevices);
    if (!this.autoscaling) return status;
    await this.autoscaling.setPolicy(taskId, undefined, 'manual', status.executors.length);
    return (await this.status(taskId))!;
  }

  async setAutoscale(taskId: string, policy: AutoscalePolicy, source: 'admin' | 'app'): Promise<TaskStatus> {
    this.assertOpen();
    await this.init();
    const record = await this.opts.store.getTask(taskId);
    if (!record) throw new TaskNotFoundError(taskId);
    if (!this.autoscaling) throw new AutoscalingOffError();
    const per = this.managed.get(taskId)?.launch.devicesPerExecutor ?? 1;
    const poolExecutors = Math.floor(this.inventory.reduce((a, n) => a + n.devices.length, 0) / per);
    if (!Number.isInteger(policy.min) || policy.min < 0) throw new InvalidAutoscaleError('min', `must be an integer >= 0, got ${policy.min}`);
    if (!Number.isInteger(policy.max) || policy.max < 1) throw new InvalidAutoscaleError('max', `must be an integer >= 1, got ${policy.max}`);
    if (policy.min > policy.max) throw new InvalidAutoscaleError('min', `min ${policy.min} is greater than max ${policy.max}`);
    if (policy.max > poolExecutors) throw new InvalidAutoscaleError('max', `max ${policy.max} is beyond the pool: ${poolExecutors} executor(s) of ${per} device(s) fit`);
    if ('target' in policy && !(policy.target > 0)) throw new InvalidAutoscaleError('target', `must be > 0, got ${policy.target}`);
    if ('sloMs' in policy && !(policy.sloMs > 0)) throw new InvalidAutoscaleError('slo_ms', `must be > 0, got ${policy.sloMs}`);
    await this.autoscaling.setPolicy(taskId, policy, source, this.managed.get(taskId)?.tm.executors().length ?? 0);
    return (await this.status(taskId))!;
  }

  async applyPlan(targets: PlanTarget[]): Promise<TaskStatus[]> {
    this.assertOpen();
    await this.init();
    return this.planLock.run(async () => {
      const ids = targets.map((t) => t.taskId);
      const run = () => this.applyPlanNow(targets);
      return this.autoscaling ? this.autoscaling.holding(ids, run) : run();
    });
  }

  /** Validates the whole plan against the running tasks and the inventory, then scales (downs first); rolls back on failure. */
  private async applyPlanNow(targets: PlanTarget[]): Promise<TaskStatus[]> {
    const seen = new Set<string>();
    const current = new Map<string, number>();
    const records = this.autoscaling ? new Map((await this.opts.store.listAutoscale()).map((r) => [r.taskId, r])) : new Map<string, AutoscaleRecord>();
    for (const t of targets) {
      if (seen.has(t.taskId)) throw new InvalidPlanError(t.field, `task ${t.taskId} is given twice`);
      seen.add(t.taskId);
      if (!Number.isInteger(t.executors) || t.executors < 0) throw new InvalidPlanError(`${t.field}.replicas`, `must be an integer >= 0, got ${t.executors}`);
      const record = await this.opts.store.getTask(t.taskId);
      const m = this.managed.get(t.taskId);
      if (!record || !m) throw new InvalidPlanError(t.field, `task ${t.taskId} is not deployed on this platform`);
      if (record.state !== 'ready') throw new InvalidPlanError(t.field, `task ${t.taskId} is ${record.state}, not ready`);
      const per = m.launch.devicesPerExecutor;
      if (t.devicesPerExecutor !== per) {
        throw new InvalidPlanError(`${t.field}.devicesPerExecutor`, `the plan gives ${t.devicesPerExecutor} device(s) per executor but task ${t.taskId} runs ${per}: its tensor-parallel degree is part of the task's config (e.g. tensorParallel / tp), so deploy the app with that degree`);
      }
      const policy = records.get(t.taskId)?.policy;
      if (policy && (t.executors < policy.min || t.executors > policy.max)) {
        throw new InvalidPlanError(`${t.field}.replicas`, `${t.executors} executors is outside task ${t.taskId}'s autoscaling policy (min ${policy.min}, max ${policy.max}); change it with \`cornserve autoscale\` first`);
      }
      current.set(t.taskId, m.tm.executors().length);
    }
    // The fit, on a copy of the inventory: every planned task's devices freed, then its executors allocated by
    // the live policy (larger executors first), next to the devices other tasks keep.
    const nodes = [...this.inventory].sort((a, b) => a.node.localeCompare(b.node));
    let trial = structuredClone(this.inventory);
    for (const t of targets) trial = freeOwner(trial, t.taskId).inventory;
    const total = this.inventory.reduce((a, n) => a + n.devices.length, 0);
    for (const t of [...targets].sort((a, b) => b.devicesPerExecutor - a.devicesPerExecutor)) {
      if (t.executors === 0) continue;
      try {
        trial = allocateChunks(trial, t.executors, t.devicesPerExecutor, t.taskId).inventory;
      } catch (e) {
        throw new InvalidPlanError(`${t.field}.replicas`, `${t.executors} executor(s) of ${t.devicesPerExecutor} device(s) do not fit: ${(e as Error).message} (the platform has ${total} device(s) on ${nodes.length} node(s), the plan's other tasks and every task it does not name included)`);
      }
      const perNode = new Map<number, number>();
      for (const p of t.placement) {
        const node = nodes[p.node];
        if (!node) throw new InvalidPlanError(`${p.field}.node`, `node ${p.node} does not exist: the platform has ${nodes.length} node(s)`);
        perNode.set(p.node, (perNode.get(p.node) ?? 0) + p.executors * t.devicesPerExecutor);
        if (perNode.get(p.node)! > node.devices.length) throw new InvalidPlanError(`${p.field}.executors`, `${p.executors} executor(s) of ${t.devicesPerExecutor} device(s) do not fit node ${node.node} (${node.devices.length} devices)`);
      }
    }
    const steps = targets.map((t) => ({ t, delta: t.executors - current.get(t.taskId)! })).filter((s) => s.delta !== 0).sort((a, b) => a.delta - b.delta);
    const done: typeof steps = [];
    try {
      for (const step of steps) {
        await this.scaleDevices(step.t.taskId, step.delta * step.t.devicesPerExecutor);
        done.push(step);
      }
    } catch (e) {
      log.warn({ err: (e as Error).message, undo: done.length }, 'applying a plan failed; rolling back');
      for (const step of done.reverse()) {
        await this.scaleDevices(step.t.taskId, -step.delta * step.t.devicesPerExecutor).catch((err: unknown) => log.error({ err, task: step.t.taskId }, 'rollback of a plan step failed'));
      }
      throw e;
    }
    for (const t of targets) await this.autoscaling?.startFrom(t.taskId, current.get(t.taskId)!, t.executors);
    log.info({ plan: targets.map((t) => `${t.executors} × ${t.taskId}`) }, 'plan applied');
    return Promise.all(targets.map(async (t) => (await this.status(t.taskId))!));
  }

  /**
   * ± devices (multiples of devicesPerExecutor); removal drains. The autoscaler's way in (no manual pin).
   * A scale-up holds the task's lock only to take its devices and launch its executors, then waits for them to be
   * ready outside it: a task still starting executors can be given more at once (the autoscaler adds the rest of a
   * step as soon as it sees it, instead of one start after another). On a failed start, the devices go back under
   * the lock, only those the task still owns and no executor of it holds (a drain or a teardown meanwhile freed the others).
   */
  private async scaleDevices(taskId: string, deltaDevices: number): Promise<TaskStatus> {
    this.assertOpen();
    await this.init();
    if (!Number.isInteger(deltaDevices) || deltaDevices === 0) throw new InvalidScaleError(`num_devices must be a non-zero integer, got ${deltaDevices}`);
    const launched = await this.taskLocks.run(taskId, async () => {
      const record = await this.opts.store.getTask(taskId);
      if (!record) throw new TaskNotFoundError(taskId);
      if (record.state !== 'ready') throw new TaskNotReadyError(taskId, record.state);
      const m = this.managed.get(taskId);
      if (!m) throw new TaskNotReadyError(taskId, 'not running in this resource manager');
      const per = m.launch.devicesPerExecutor;
      if (Math.abs(deltaDevices) % per !== 0) {
        throw new InvalidScaleError(`task ${taskId} runs ${per} device(s) per executor; scale by a multiple of ${per}, not ${deltaDevices}`);
      }
      const count = Math.abs(deltaDevices) / per;
      if (deltaDevices > 0) {
        const groups = await this.changeInventory((inv) => {
          const a = allocateChunks(inv, count, per, taskId);
          return { inventory: a.inventory, result: a.groups };
        });
        // addExecutors creates its executors synchronously (they count from now on) and resolves when all are ready.
        const ready = m.tm.addExecutors(groups);
        ready.catch(() => undefined); // awaited below, outside the lock
        await this.opts.store.updateTask(taskId, { devices: m.tm.devices() });
        return { m, groups, ready };
      }
      // Down to zero is allowed (the reference allows it): the task stays deployed and ready, and its invocations
      // are answered 503 NO_EXECUTOR, saying how to bring one back (lib/dispatch-errors.ts), until it is scaled up again.
      const executors = m.tm.executors().length;
      if (count > executors) throw new ScaleBelowMinimumError(taskId, executors, count);
      const freed = await m.tm.removeExecutors(count, { graceMs: this.opts.drainGraceMs });
      await this.changeInventory((inv) => ({ inventory: freeDevices(inv, freed, taskId), result: undefined }));
      await this.opts.store.updateTask(taskId, { devices: m.tm.devices() });
      return undefined;
    });
    if (launched) {
      const { m, groups, ready } = launched;
      try {
        await ready;
      } catch (e) {
        await this.taskLocks.run(taskId, async () => {
          const held = new Set(m.tm.devices().map((d) => d.globalRank));
          await this.changeInventory((inv) => {
            const owned = new Set(devicesOf(inv, taskId).map((d) => d.globalRank));
            const back = groups.flat().filter((d) => owned.has(d.globalRank) && !held.has(d.globalRank));
            return { inventory: back.length ? freeDevices(inv, back, taskId) : inv, result: undefined };
          });
          if (this.managed.get(taskId) === m) await this.opts.store.updateTask(taskId, { devices: m.tm.devices() });
        });
        throw e;
      }
    }
    log.info({ task: taskId, delta: deltaDevices, executors: this.managed.get(taskId)?.tm.executors().length }, 'scaled');
    return (await this.status(taskId))!;
  }

  /** Profiles the task on one of its ready executors and stores the profile (control/taskmanager/profiler-run.ts). */
  async profile(taskId: string): Promise<ProfileRunResult> {
    this.assertOpen();
    await this.init();
    const record = await this.opts.store.getTask(taskId);
    if (!record) throw new TaskNotFoundError(taskId);
    const m = this.managed.get(taskId);
    if (record.state !== 'ready' || !m) throw new TaskNotReadyError(taskId, m ? record.state : 'not running in this resource manager');
    const task = this.taskFromRecord(record);
    return runProfile({
      store: this.opts.store, record, task, descriptor: this.descriptorOf(task), devicesPerExecutor: m.launch.devicesPerExecutor,
      deviceKind: this.deviceKind(), options: this.opts.profiler ?? {}, log,
    });
  }

  /** The stored profiles of this platform's device kind (any app's: they are keyed by unit-task key). */
  async listProfiles(): Promise<TaskProfile[]> {
    return (await this.opts.store.listProfiles()).filter((p) => p.deviceKind === this.deviceKind());
  }

  private deviceKind(): string {
    return this.opts.deviceKind ?? (this.opts.platform.kind === 'local' ? 'cpu' : 'gpu');
  }

  /**
   * A node's sidecar is down (died; its supervisor restarts it) or up again: executors on that node of tasks that move
   * tensors leave the routes meanwhile (TaskManager.setSidecarDown), and listTasks says so.
   */
  setSidecarState(node: string, state: 'up' | 'down'): void {
    if (state === 'down') this.sidecarsDown.add(node);
    else this.sidecarsDown.delete(node);
    for (const m of this.managed.values()) m.tm.setSidecarDown(node, state === 'down');
  }

  /** The tasks whose executors move tensors through `node`'s sidecar. */
  tasksMovingTensorsOn(node: string): Set<string> {
    return new Set([...this.managed].filter(([, m]) => m.launch.movesTensors && m.tm.devices().some((d) => d.node === node)).map(([taskId]) => taskId));
  }

  /** Nodes where `taskId`'s executors are held out of the routes because the sidecar is down. */
  private sidecarDownOf(taskId: string): { sidecarDown?: string[] } {
    const nodes = this.managed.get(taskId)?.tm.sidecarDownNodes() ?? [];
    return nodes.length ? { sidecarDown: nodes } : {};
  }

  async listTasks(): Promise<TaskStatus[]> {
    const [records, routes, autoscale] = await Promise.all([
      this.opts.store.listTasks(),
      this.opts.store.listExecutors(),
      this.autoscaling ? this.opts.store.listAutoscale() : Promise.resolve([]),
    ]);
    return records.map((r) => this.withAutoscale({ ...r, name: this.nameOf(r), executors: routes.filter((x) => x.taskId === r.taskId), ...this.sidecarDownOf(r.taskId) }, autoscale.find((a) => a.taskId === r.taskId)));
  }

  async status(taskId: string): Promise<TaskStatus | undefined> {
    const record = await this.opts.store.getTask(taskId);
    if (!record) return undefined;
    const autoscale = this.autoscaling ? await this.opts.store.getAutoscale(taskId) : undefined;
    return this.withAutoscale({ ...record, name: this.nameOf(record), executors: await this.opts.store.listExecutors(taskId), ...this.sidecarDownOf(taskId) }, autoscale);
  }

  private withAutoscale(status: TaskStatus, record: AutoscaleRecord | undefined): TaskStatus {
    const autoscale = this.autoscaling?.status(status.taskId, record);
    return autoscale ? { ...status, autoscale } : status;
  }

  /**
   * Brings back every task in the Store (after a restart against the same Redis): stale routes are removed,
   * tasks nobody uses any more are deleted, the others get their executors started again on their recorded
   * devices (or new ones when those are gone). A task that cannot be brought back is marked failed.
   */
  async recover(): Promise<RecoveryReport> {
    this.assertOpen();
    await this.init();
    const report: RecoveryReport = { recovered: [], removed: [], failed: [] };
    for (const { taskId } of await this.opts.store.listTasks()) {
      await this.taskLocks.run(taskId, async () => {
        const record = await this.opts.store.getTask(taskId);
        if (!record || this.managed.has(taskId)) return;
        await this.removeStaleRoutes(record.taskId);
        if (record.usage <= 0 || record.state === 'tearing down') {
          await this.teardown(record.taskId);
          report.removed.push(record.taskId);
          return;
        }
        try {
          if (record.state === 'ready' && record.devices.length === 0) {
            this.keepAtZero(record.taskId, this.taskFromRecord(record));
            report.recovered.push(record.taskId);
            return;
          }
          await this.opts.store.updateTask(record.taskId, { state: 'deploying' });
          await this.bringUp(record.taskId, this.taskFromRecord(record), record.devices);
          report.recovered.push(record.taskId);
        } catch (e) {
          log.error({ task: record.taskId, err: (e as Error).message }, 'cannot recover task');
          await this.opts.store.updateTask(record.taskId, { state: 'failed', devices: [] }).catch(() => {});
          report.failed.push({ taskId: record.taskId, error: (e as Error).message });
        }
      });
    }
    log.info(report, 'recovery finished');
    return report;
  }

  /**
   * After the store lost its data (control/store/watch.ts): every task run here whose record is gone is stopped
   * (its executors with no drain: nothing routes to them any more) and its devices freed; the inventory is written
   * back. Tasks the store still records are left alone. Idempotent; returns the task ids stopped.
   */
  async reconcile(): Promise<string[]> {
    this.assertOpen();
    await this.init();
    const stopped: string[] = [];
    for (const taskId of [...this.managed.keys()]) {
      await this.taskLocks.run(taskId, async () => {
        const m = this.managed.get(taskId);
        if (!m || (await this.opts.store.getTask(taskId))) return;
        this.managed.delete(taskId);
        await m.tm.stop({ drain: false });
        this.autoscaling?.autoscaler.forget(taskId);
        stopped.push(taskId);
        log.warn({ task: taskId, name: m.name }, `task ${m.name} is no longer in the store: its executors were stopped`);
      });
    }
    await this.changeInventory((inv) => stopped.reduce((acc, taskId) => freeOwner(acc, taskId).inventory, inv));
    return stopped;
  }

  /**
   * Takes over the tasks in the Store whose executors are still running (a restarted resource manager on
   * Kubernetes, after reconcile), without restarting them. For each task: its TaskManager is rebuilt from the
   * Store's routes and the inventory; each executor is health-checked (bounded by adoptHealthTimeoutMs); the
   * healthy ones are kept as they are, those gone or unhealthy are restarted through the platform on their
   * devices. From then on the task is managed as usual (scale, drain, restart on unexpected exit). Routes that
   * were draining are finished off; a task with no executor to adopt is brought up as recover() does; tasks
   * nobody uses are torn down. Requires a platform that knows the executors (Kubernetes after reconcile,
   * or the local platform instance that started them): their exits come through its events.
   */
  async adopt(options: AdoptOptions = {}): Promise<AdoptionReport> {
    this.assertOpen();
    await this.init();
    const started = new Set(options.startedExecutors ?? []);
    const report: AdoptionReport = { adopted: [], kept: [], restarted: [], dropped: [], recovered: [], removed: [], failed: [] };
    const tasks = await this.opts.store.listTasks();
    await Promise.all(tasks.map(({ taskId }) => this.taskLocks.run(taskId, () => this.adoptTask(taskId, started, report))));
    log.info(report, 'adoption finished');
    return report;
  }

  /**
   * Stops every executor this manager runs (no drain) and deletes their routes, but keeps the task records
   * and their usage in the Store, so a new resource manager on the same Store can recover them. Idempotent.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.capacitySource?.stop();
    await this.autoscaling?.stop();
    const all = [...this.managed.entries()];
    this.managed.clear();
    await Promise.allSettled(all.map(([, m]) => m.tm.stop({ drain: false })));
  }

  // ---------- deploy / teardown / adoption of one task (called with its lock held) ----------

  private async adoptTask(taskId: string, started: ReadonlySet<string>, report: AdoptionReport): Promise<void> {
    const record = await this.opts.store.getTask(taskId);
    if (!record || this.managed.has(taskId)) return;
    if (record.usage <= 0 || record.state === 'tearing down') {
      await this.teardown(taskId);
      report.removed.push(taskId);
      return;
    }
    try {
      const task = this.taskFromRecord(record);
      const descriptor = this.descriptorOf(task);
      const launch = descriptor.launch(task);
      const per = launch.devicesPerExecutor;
      const routes = await this.opts.store.listExecutors(taskId);
      const candidates = routes.filter((r) => r.state !== 'draining' && r.devices.length === per && r.devices.every((d) => d.node === r.devices[0]!.node));
      const keep = await this.changeInventory((inv) => {
        let inventory = freeOwner(inv, taskId).inventory;
        const fitting: ExecutorRoute[] = [];
        for (const r of candidates) {
          try {
            inventory = claimDevices(inventory, r.devices, taskId);
            fitting.push(r);
          } catch {
            // devices held by another task or not in the inventory: dropped below
          }
        }
        return { inventory, result: fitting };
      });
      for (const r of routes.filter((x) => !keep.includes(x))) {
        await this.opts.platform.stopExecutor(r.executorId).catch(() => {});
        await this.opts.store.deleteExecutor(r.executorId);
        report.dropped.push(r.executorId);
      }
      if (keep.length === 0 && record.state === 'ready' && record.devices.length === 0) {
        this.keepAtZero(taskId, task);
        report.adopted.push(taskId);
        return;
      }
      if (keep.length === 0) {
        await this.opts.store.updateTask(taskId, { state: 'deploying' });
        await this.bringUp(taskId, task, record.devices);
        report.recovered.push(taskId);
        return;
      }
      const tm = this.newTaskManager(taskId, task, descriptor, launch);
      const adoptBound = this.opts.adoptHealthTimeoutMs ?? 10_000;
      const startBound = this.opts.healthTimeoutMs ?? 60_000;
      const outcome = await tm.adoptExecutors(keep.map((route) => ({ route, timeoutMs: started.has(route.executorId) ? startBound : adoptBound })));
      this.managed.set(taskId, { tm, name: task.name, launch });
      await this.opts.store.updateTask(taskId, { devices: tm.devices(), state: 'ready' });
      report.adopted.push(taskId);
      report.kept.push(...outcome.kept);
      report.restarted.push(...outcome.restarted, ...outcome.restarting);
    } catch (e) {
      log.error({ task: taskId, err: (e as Error).message }, 'cannot adopt task');
      await this.opts.store.updateTask(taskId, { state: 'failed' }).catch(() => {});
      report.failed.push({ taskId, error: (e as Error).message });
    }
  }

  private acquire(taskId: string, task: UnitTask, onProgress: (p: DeployProgress) => void, acquired: string[]): Promise<void> {
    const name = task.name;
    const progress = (state: DeployProgress['state'], message?: string) => {
      try {
        onProgress({ task: name, taskId, state, ...(message !== undefined ? { message } : {}) });
      } catch (e) {
        log.warn({ err: e }, 'progress callback threw');
      }
    };
    return this.taskLocks.run(taskId, async () => {
      try {
        const { record, created } = await this.opts.store.acquireTask(newTaskRecord(task));
        acquired.push(taskId);
        if (!created && this.managed.has(taskId)) return progress('shared');
        progress('deploying');
        try {
          if (!created) await this.removeStaleRoutes(taskId); // in the Store but not running here: adopt it
          await this.bringUp(taskId, task, created ? [] : record.devices);
        } catch (e) {
          // Undo at once, under the lock, so a concurrent deploy of the same task starts from a clean slate.
          acquired.splice(acquired.indexOf(taskId), 1);
          if ((await this.opts.store.releaseTask(taskId)) === 0) await this.teardown(taskId);
          else await this.opts.store.updateTask(taskId, { state: 'failed' }).catch(() => {});
          throw e;
        }
        progress('ready');
      } catch (e) {
        progress('failed', (e as Error).message);
        throw new DeployError(name, taskId, e);
      }
    });
  }

  /** Devices (recorded ones when still free, else new), a TaskManager, its executors healthy, state ready. */
  private async bringUp(taskId: string, task: UnitTask, recorded: DeviceRef[]): Promise<void> {
    const descriptor = this.descriptorOf(task);
    const launch = descriptor.launch(task);
    const per = launch.devicesPerExecutor;
    const devices = await this.changeInventory((inv) => {
      const groups = chunk(recorded, per);
      if (recorded.length > 0 && groups.every((g) => g.length === per && g.every((d) => d.node === g[0]!.node))) {
        try {
          return { inventory: claimDevices(inv, recorded, taskId), result: recorded };
        } catch {
          // taken meanwhile: allocate afresh below
        }
      }
      const a = allocate(freeOwner(inv, taskId).inventory, per, taskId);
      return { inventory: a.inventory, result: a.devices };
    });
    await this.opts.store.updateTask(taskId, { devices });
    const tm = this.newTaskManager(taskId, task, descriptor, launch);
    try {
      await tm.addExecutors(chunk(devices, per));
    } catch (e) {
      await tm.stop({ drain: false });
      await this.changeInventory((inv) => freeOwner(inv, taskId).inventory).catch(() => {});
      await this.opts.store.updateTask(taskId, { devices: [] }).catch(() => {});
      throw e;
    }
    this.managed.set(taskId, { tm, name: task.name, launch });
    await this.opts.store.updateTask(taskId, { state: 'ready' });
    log.info({ task: taskId, name: task.name, devices: devices.map((d) => d.globalRank) }, 'task ready');
  }

  /** A task scaled to zero before a restart stays at zero: a TaskManager without executors, ready to scale up. */
  private keepAtZero(taskId: string, task: UnitTask): void {
    const descriptor = this.descriptorOf(task);
    const launch = descriptor.launch(task);
    this.managed.set(taskId, { tm: this.newTaskManager(taskId, task, descriptor, launch), name: task.name, launch });
    log.info({ task: taskId, name: task.name }, 'task kept at zero executors');
  }

  private newTaskManager(taskId: string, task: UnitTask, descriptor: TaskDescriptor, launch: LaunchSpec): TaskManager {
    const tm = new TaskManager({
      ...this.opts.taskManager,
      taskId,
      executorName: descriptor.executorName(task),
      launch,
      store: this.opts.store,
      platform: this.opts.platform,
      ...(this.opts.executorEnv ? { env: this.opts.executorEnv } : {}),
      ...(this.opts.healthTimeoutMs !== undefined ? { healthTimeoutMs: this.opts.healthTimeoutMs } : {}),
      ...(this.opts.drainGraceMs !== undefined ? { drainGraceMs: this.opts.drainGraceMs } : {}),
    });
    for (const node of this.sidecarsDown) tm.setSidecarDown(node, true);
    return tm;
  }

  /** State 'tearing down', drain and stop its executors (or stale routes), free its devices, delete it. */
  private async teardown(taskId: string): Promise<void> {
    await this.opts.store.updateTask(taskId, { state: 'tearing down' }).catch(() => {});
    const m = this.managed.get(taskId);
    this.managed.delete(taskId);
    if (m) await m.tm.stop({ drain: true, graceMs: this.opts.drainGraceMs });
    await this.removeStaleRoutes(taskId);
    await this.changeInventory((inv) => freeOwner(inv, taskId).inventory);
    await this.opts.store.deleteAutoscale(taskId);
    this.autoscaling?.autoscaler.forget(taskId);
    await this.opts.store.deleteTask(taskId);
    log.info({ task: taskId }, 'task torn down');
  }

  /** Usage - 1 for each (under its lock); teardown at 0. Returns the errors (release is best effort). */
  private async releaseAll(taskIds: string[]): Promise<unknown[]> {
    const errors: unknown[] = [];
    await Promise.all(
      taskIds.map((taskId) =>
        this.taskLocks
          .run(taskId, async () => {
            const usage = await this.opts.store.releaseTask(taskId);
            if (usage === undefined) log.warn({ task: taskId }, 'release of an unknown task ignored');
            else if (usage === 0) await this.teardown(taskId);
          })
          .catch((e) => void errors.push(e)),
      ),
    );
    return errors;
  }

  /** Routes of `taskId` no TaskManager here owns (left by a previous process): stop them and delete the routes. */
  private async removeStaleRoutes(taskId: string): Promise<void> {
    for (const route of await this.opts.store.listExecutors(taskId)) {
      await this.opts.platform.stopExecutor(route.executorId).catch(() => {});
      await this.opts.store.deleteExecutor(route.executorId);
    }
  }

  // ---------- inventory ----------

  /** Applies a pure inventory change under the inventory lock and persists it; the in-memory copy moves only on success. */
  private changeInventory<T = Inventory>(change: (inv: Inventory) => { inventory: Inventory; result: T } | Inventory): Promise<T> {
    return this.inventoryLock.run(async () => {
      const out = change(this.inventory);
      const { inventory, result } = Array.isArray(out) ? { inventory: out, result: out as T } : out;
      await this.commitInventory(inventory);
      return result;
    });
  }

  private async commitInventory(inventory: Inventory): Promise<void> {
    await this.opts.store.putInventory(inventory);
    this.inventory = inventory;
  }

  private nameOf(record: UnitTaskRecord): string {
    const m = this.managed.get(record.taskId);
    if (m) return m.name;
    try {
      return this.taskFromRecord(record).name;
    } catch {
      return record.taskId;
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new ResourceManagerClosedError();
  }
}

/** Consecutive groups of `size` (the last may be shorter). */
const chunk = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
