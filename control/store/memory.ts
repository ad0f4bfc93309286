/**
 * MemoryStore: the embedded Store for a single `cornserve up` process.
 *
 * Plain Maps. Records are copied on the way in and on the way out, so callers never share an object
 * with the store. Every method is async like the Redis backend, but does its read-modify-write
 * synchronously (no `await` in between), which makes it atomic on Node's single thread.
 * Change notifications are delivered on a microtask, in order, to the listeners still subscribed.
 */
import { StoreClosedError, StoreConflictError, StoreNotFoundError } from '../../lib/store-errors.js';
import { chunkMember, profileField } from './keys.js';
import { deliver } from './listeners.js';
import { appNames, assertIntegerDelta, jsonCopy, sortApps, sortChunks, sortExecutorStats, sortExecutors, sortProfiles, sortSidecars, sortTasks } from './records.js';
import type {
  AppRecord,
  AppState,
  ExecutorLiveStats,
  AutoscalePatch,
  AutoscalePatchOptions,
  AutoscaleRecord,
  ExecutorRoute,
  ExecutorState,
  NodeInventory,
  Store,
  StoreChange,
  SidecarRecord,
  TaskDefinitionRecord,
  TaskProfile,
  TensorChunkMeta,
  UnitTaskRecord,
  Unsubscribe,
} from '../../lib/store.js';

type Listener = (change: StoreChange) => void;

export class MemoryStore implements Store {
  private readonly apps = new Map<string, AppRecord>();
  private readonly taskDefinitions = new Map<string, TaskDefinitionRecord>();
  /** name or alias -> appId */
  private readonly names = new Map<string, string>();
  private readonly tasks = new Map<string, UnitTaskRecord>();
  private inventory: NodeInventory[] = [];
  private readonly executors = new Map<string, ExecutorRoute>();
  /** chunkMember(id, n) -> meta */
  private readonly chunks = new Map<string, TensorChunkMeta>();
  /** node -> registration */
  private readonly sidecars = new Map<string, SidecarRecord>();
  /** profileField(taskKey, deviceKind) -> profile */
  private readonly profiles = new Map<string, TaskProfile>();
  /** executor id -> live stats */
  private readonly executorStats = new Map<string, ExecutorLiveStats>();
  /** counter name -> value and expiry (epoch ms) */
  private readonly counters = new Map<string, { value: number; expiresAt: number }>();
  private readonly autoscale = new Map<string, AutoscaleRecord>();
  private readonly listeners = new Set<Listener>();
  private closed = false;
  private epoch: string | undefined;

  async ready(): Promise<void> {
    this.assertOpen();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
  }

  async subscriptionReady(): Promise<void> {
    this.assertOpen();
  }

  // ---------- apps ----------

  async putApp(app: AppRecord): Promise<void> {
    this.assertOpen();
    for (const name of appNames(app)) {
      const owner = this.names.get(name);
      if (owner !== undefined && owner !== app.appId) throw new StoreConflictError(`app name "${name}"`, owner);
    }
    const previous = this.apps.get(app.appId);
    if (previous) for (const name of appNames(previous)) this.names.delete(name);
    for (const name of appNames(app)) this.names.set(name, app.appId);
    this.apps.set(app.appId, jsonCopy(app));
    this.emit({ kind: 'app', id: app.appId, op: 'put' });
  }

  async getApp(appId: string): Promise<AppRecord | undefined> {
    this.assertOpen();
    return copyOrUndefined(this.apps.get(appId));
  }

  async findApp(idOrName: string): Promise<AppRecord | undefined> {
    this.assertOpen();
    const byId = this.apps.get(idOrName);
    if (byId) return jsonCopy(byId);
    const owner = this.names.get(idOrName);
    return owner === undefined ? undefined : copyOrUndefined(this.apps.get(owner));
  }

  async listApps(): Promise<AppRecord[]> {
    this.assertOpen();
    return sortApps([...this.apps.values()].map(jsonCopy));
  }

  async setAppState(appId: string, state: AppState): Promise<void> {
    this.assertOpen();
    must(this.apps.get(appId), 'app', appId).state = state;
    this.emit({ kind: 'app', id: appId, op: 'put' });
  }

  async putTaskDefinition(def: TaskDefinitionRecord): Promise<'created' | 'same' | 'conflict'> {
    this.assertOpen();
    const existing = this.taskDefinitions.get(def.name);
    if (existing) return existing.digest === def.digest ? 'same' : 'conflict';
    this.taskDefinitions.set(def.name, structuredClone(def));
    this.emit({ kind: 'task-definition', id: def.name, op: 'put' });
    return 'created';
  }

  async listTaskDefinitions(): Promise<TaskDefinitionRecord[]> {
    this.assertOpen();
    return [...this.taskDefinitions.values()].map((d) => structuredClone(d));
  }

  async deleteTaskDefinition(name: string): Promise<boolean> {
    this.assertOpen();
    if (!this.taskDefinitions.delete(name)) return false;
    this.emit({ kind: 'task-definition', id: name, op: 'delete' });
    return true;
  }

  async deleteApp(appId: string): Promise<boolean> {
    this.assertOpen();
    const app = this.apps.get(appId);
    if (!app) return false;
    for (const name of appNames(app)) if (this.names.get(name) === appId) this.names.delete(name);
    this.apps.delete(appId);
    this.emit({ kind: 'app', id: appId, op: 'delete' });
    return true;
  }

  // ---------- unit tasks ----------

  async acquireTask(record: Omit<UnitTaskRecord, 'usage'>): Promise<{ record: UnitTaskRecord; created: boolean }> {
    this.assertOpen();
    const existing = this.tasks.get(record.taskId);
    if (existing) {
      existing.usage += 1;
      this.emit({ kind: 'task', id: record.taskId, op: 'put' });
      return { record: jsonCopy(existing), created: false };
    }
    const stored: UnitTaskRecord = { ...jsonCopy(record), usage: 1 };
    this.tasks.set(record.taskId, stored);
    this.emit({ kind: 'task', id: record.taskId, op: 'put' });
    return { record: jsonCopy(stored), created: true };
  }

  async releaseTask(taskId: string): Promise<number | undefined> {
    this.assertOpen();
    const task = this.tasks.get(taskId);
    if (!task) return undefined;
    task.usage = Math.max(0, task.usage - 1);
    this.emit({ kind: 'task', id: taskId, op: 'put' });
    return task.usage;
  }

  async getTask(taskId: string): Promise<UnitTaskRecord | undefined> {
    this.assertOpen();
    return copyOrUndefined(this.tasks.get(taskId));
  }

  async listTasks(): Promise<UnitTaskRecord[]> {
    this.assertOpen();
    return sortTasks([...this.tasks.values()].map(jsonCopy));
  }

  async updateTask(taskId: string, patch: Partial<Pick<UnitTaskRecord, 'state' | 'devices'>>): Promise<void> {
    this.assertOpen();
    const task = must(this.tasks.get(taskId), 'task', taskId);
    if (patch.state !== undefined) task.state = patch.state;
    if (patch.devices !== undefined) task.devices = jsonCopy(patch.devices);
    task.updatedAt = Date.now();
    this.emit({ kind: 'task', id: taskId, op: 'put' });
  }

  async deleteTask(taskId: string): Promise<boolean> {
    this.assertOpen();
    if (!this.tasks.delete(taskId)) return false;
    this.emit({ kind: 'task', id: taskId, op: 'delete' });
    return true;
  }

  // ---------- device inventory ----------

  async putInventory(nodes: NodeInventory[]): Promise<void> {
    this.assertOpen();
    this.inventory = jsonCopy(nodes);
  }

  async getInventory(): Promise<NodeInventory[]> {
    this.assertOpen();
    return jsonCopy(this.inventory);
  }

  // ---------- routes ----------

  async putExecutor(route: ExecutorRoute): Promise<void> {
    this.assertOpen();
    this.executors.set(route.executorId, jsonCopy(route));
    this.emit({ kind: 'route', id: route.executorId, taskId: route.taskId, op: 'put' });
  }

  async getExecutor(executorId: string): Promise<ExecutorRoute | undefined> {
    this.assertOpen();
    return copyOrUndefined(this.executors.get(executorId));
  }

  async listExecutors(taskId?: string): Promise<ExecutorRoute[]> {
    this.assertOpen();
    const all = [...this.executors.values()];
    return sortExecutors((taskId === undefined ? all : all.filter((r) => r.taskId === taskId)).map(jsonCopy));
  }

  async setExecutorState(executorId: string, state: ExecutorState): Promise<void> {
    this.assertOpen();
    const route = must(this.executors.get(executorId), 'executor', executorId);
    route.state = state;
    this.emit({ kind: 'route', id: executorId, taskId: route.taskId, op: 'put' });
  }

  async adjustOutstanding(executorId: string, delta: number): Promise<number> {
    this.assertOpen();
    assertIntegerDelta(delta);
    const route = must(this.executors.get(executorId), 'executor', executorId);
    route.outstanding += delta;
    return route.outstanding;
  }

  async deleteExecutor(executorId: string): Promise<boolean> {
    this.assertOpen();
    const route = this.executors.get(executorId);
    if (!route) return false;
    this.executors.delete(executorId);
    this.emit({ kind: 'route', id: executorId, taskId: route.taskId, op: 'delete' });
    return true;
  }

  // ---------- profiles and live service ----------

  async putProfile(profile: TaskProfile): Promise<void> {
    this.assertOpen();
    this.profiles.set(profileField(profile.taskKey, profile.deviceKind), jsonCopy(profile));
  }

  async getProfile(taskKey: string, deviceKind: string): Promise<TaskProfile | undefined> {
    this.assertOpen();
    const p = this.profiles.get(profileField(taskKey, deviceKind));
    return p && jsonCopy(p);
  }

  async listProfiles(): Promise<TaskProfile[]> {
    this.assertOpen();
    return sortProfiles([...this.profiles.values()].map(jsonCopy));
  }

  async putExecutorStats(stats: ExecutorLiveStats): Promise<void> {
    this.assertOpen();
    this.executorStats.set(stats.executorId, jsonCopy(stats));
  }

  async listExecutorStats(taskId?: string): Promise<ExecutorLiveStats[]> {
    this.assertOpen();
    const all = [...this.executorStats.values()];
    return sortExecutorStats((taskId === undefined ? all : all.filter((s) => s.taskId === taskId)).map(jsonCopy));
  }

  // ---------- sidecar tensor metadata ----------

  async putChunk(meta: TensorChunkMeta): Promise<void> {
    this.assertOpen();
    this.chunks.set(chunkMember(meta.id, meta.chunk), jsonCopy(meta));
    this.emit({ kind: 'tensor', id: meta.id, chunk: meta.chunk, op: 'put' });
  }

  async getChunk(id: string, chunk: number): Promise<TensorChunkMeta | undefined> {
    this.assertOpen();
    return copyOrUndefined(this.chunks.get(chunkMember(id, chunk)));
  }

  async listChunks(id?: string): Promise<TensorChunkMeta[]> {
    this.assertOpen();
    const all = [...this.chunks.values()];
    return sortChunks((id === undefined ? all : all.filter((c) => c.id === id)).map(jsonCopy));
  }

  async deleteChunk(id: string, chunk: number): Promise<boolean> {
    this.assertOpen();
    if (!this.chunks.delete(chunkMember(id, chunk))) return false;
    this.emit({ kind: 'tensor', id, chunk, op: 'delete' });
    return true;
  }

  async takeExpiredChunks(now: number): Promise<TensorChunkMeta[]> {
    this.assertOpen();
    const expired: TensorChunkMeta[] = [];
    for (const [member, meta] of this.chunks) {
      if (meta.expiresAt > now) continue;
      this.chunks.delete(member);
      expired.push(meta);
      this.emit({ kind: 'tensor', id: meta.id, chunk: meta.chunk, op: 'delete' });
    }
    return sortChunks(expired);
  }

  // ---------- sidecar registry ----------

  async registerSidecar(record: SidecarRecord): Promise<void> {
    this.assertOpen();
    const old = this.sidecars.get(record.node);
    if (old && old.instance !== record.instance) this.removeSidecar(old);
    this.sidecars.set(record.node, jsonCopy(record));
    this.emit({ kind: 'sidecar', id: record.node, op: 'put' });
  }

  async renewSidecar(node: string, instance: string, leaseExpiresAt: number): Promise<boolean> {
    this.assertOpen();
    const rec = this.sidecars.get(node);
    if (!rec || rec.instance !== instance) return false;
    rec.leaseExpiresAt = leaseExpiresAt;
    return true;
  }

  async getSidecar(node: string): Promise<SidecarRecord | undefined> {
    this.assertOpen();
    return copyOrUndefined(this.sidecars.get(node));
  }

  async listSidecars(): Promise<SidecarRecord[]> {
    this.assertOpen();
    return sortSidecars([...this.sidecars.values()].map(jsonCopy));
  }

  async deleteSidecar(node: string, instance: string): Promise<boolean> {
    this.assertOpen();
    const rec = this.sidecars.get(node);
    if (!rec || rec.instance !== instance) return false;
    this.removeSidecar(rec);
    return true;
  }

  async takeExpiredSidecars(now: number): Promise<SidecarRecord[]> {
    this.assertOpen();
    const expired = [...this.sidecars.values()].filter((rec) => rec.leaseExpiresAt <= now);
    for (const rec of expired) this.removeSidecar(rec);
    return sortSidecars(expired.map(jsonCopy));
  }

  /** Drops a registration and every chunk entry naming its node. */
  private removeSidecar(rec: SidecarRecord): void {
    for (const [member, meta] of this.chunks) {
      if (meta.node !== rec.node) continue;
      this.chunks.delete(member);
      this.emit({ kind: 'tensor', id: meta.id, chunk: meta.chunk, op: 'delete' });
    }
    this.sidecars.delete(rec.node);
    this.emit({ kind: 'sidecar', id: rec.node, op: 'delete' });
  }

  // ---------- load counters ----------

  async addCounters(deltas: Array<{ name: string; delta: number }>, ttlMs: number): Promise<void> {
    this.assertOpen();
    const now = Date.now();
    for (const { delta } of deltas) assertIntegerDelta(delta);
    for (const { name, delta } of deltas) {
      const current = this.counters.get(name);
      const value = (current && current.expiresAt > now ? current.value : 0) + delta;
      this.counters.set(name, { value, expiresAt: now + ttlMs });
    }
    if (this.counters.size > 10_000) for (const [name, c] of this.counters) if (c.expiresAt <= now) this.counters.delete(name);
  }

  async readCounters(names: string[]): Promise<number[]> {
    this.assertOpen();
    const now = Date.now();
    return names.map((name) => {
      const c = this.counters.get(name);
      return c && c.expiresAt > now ? c.value : 0;
    });
  }

  // ---------- autoscaling state ----------

  async putAutoscale(record: AutoscaleRecord): Promise<void> {
    this.assertOpen();
    this.autoscale.set(record.taskId, jsonCopy(record));
    this.emit({ kind: 'autoscale', id: record.taskId, op: 'put' });
  }

  async getAutoscale(taskId: string): Promise<AutoscaleRecord | undefined> {
    this.assertOpen();
    return copyOrUndefined(this.autoscale.get(taskId));
  }

  async patchAutoscale(taskId: string, patch: AutoscalePatch, options: AutoscalePatchOptions = {}): Promise<AutoscaleRecord | undefined> {
    this.assertOpen();
    const current = this.autoscale.get(taskId);
    if (current && options.unlessSource?.includes(current.source)) return jsonCopy(current);
    const base = current ?? options.create;
    if (!base) return undefined;
    const record = { ...jsonCopy(base), ...jsonCopy(patch) } as AutoscaleRecord & { policy?: AutoscaleRecord['policy'] | null };
    if (record.policy === null) delete record.policy;
    this.autoscale.set(taskId, record as AutoscaleRecord);
    this.emit({ kind: 'autoscale', id: taskId, op: 'put' });
    return jsonCopy(record as AutoscaleRecord);
  }

  async listAutoscale(): Promise<AutoscaleRecord[]> {
    this.assertOpen();
    return [...this.autoscale.values()].map(jsonCopy).sort((a, b) => (a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0));
  }

  async deleteAutoscale(taskId: string): Promise<boolean> {
    this.assertOpen();
    if (!this.autoscale.delete(taskId)) return false;
    this.emit({ kind: 'autoscale', id: taskId, op: 'delete' });
    return true;
  }

  async wakeTask(taskId: string): Promise<void> {
    this.assertOpen();
    this.emit({ kind: 'wake', id: taskId, op: 'put' });
  }

  async claimEpoch(candidate: string): Promise<string> {
    this.assertOpen();
    this.epoch ??= candidate;
    return this.epoch;
  }

  // ---------- change notifications ----------

  subscribe(listener: Listener): Unsubscribe {
    this.assertOpen();
    const own: Listener = (change) => listener(change); // a distinct entry even if the same function subscribes twice
    this.listeners.add(own);
    return () => void this.listeners.delete(own);
  }

  private emit(change: StoreChange): void {
    for (const listener of this.listeners) {
      queueMicrotask(() => {
        if (this.listeners.has(listener)) deliver(listener, jsonCopy(change));
      });
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new StoreClosedError();
  }
}

const copyOrUndefined = <T>(value: T | undefined): T | undefined => (value === undefined ? undefined : jsonCopy(value));

/** The stored record an in-place update targets; a missing one is StoreNotFoundError. */
function must<T>(record: T | undefined, kind: StoreNotFoundError['kind'], id: string): T {
  if (record === undefined) throw new StoreNotFoundError(kind, id);
  return record;
}
