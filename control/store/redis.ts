/**
 * RedisStore: the Store shared by control-plane processes that run apart.
 *
 * Layout (keys.ts): apps, unit tasks and executor routes are hashes whose `record` field holds the
 * record's JSON and whose other fields hold what changes in place (state, usage, devices, outstanding),
 * so counters move with HINCRBY / Lua and never by rewriting JSON. Index sets list the ids.
 * Every transition touching more than one key, or reading before writing, is one Lua script (lua/*.lua);
 * each mutation PUBLISHes its StoreChange from inside the same script or MULTI.
 *
 * Outages: a call made while Redis is unreachable rejects with StoreUnavailableError after at most two
 * reconnection attempts (maxRetriesPerRequest 1, backoff capped at 1 s), or when it gets no reply within
 * `commandTimeoutMs`; the client keeps reconnecting on its own and the same instance works again once
 * Redis is back. Pub/sub runs on a lazily duplicated connection and resubscribes after reconnecting;
 * changes published while it was disconnected are lost, so listeners re-read what they watch.
 */
import { Redis } from 'ioredis';
import { logger } from '../../lib/log.js';
import { StoreClosedError, StoreConflictError, StoreNotFoundError, StoreUnavailableError } from '../../lib/store-errors.js';
import { chunkMember, profileField, storeKeys, type StoreKeys } from './keys.js';
import { deliver } from './listeners.js';
import { appNames, assertIntegerDelta, sortApps, sortChunks, sortExecutorStats, sortExecutors, sortProfiles, sortSidecars, sortTasks } from './records.js';
import { defineScripts, type RunScript } from './scripts.js';
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

const log = logger('store');

export interface RedisStoreOptions {
  /** redis://[user:password@]host:port[/db] */
  url: string;
  /** Prefix of every key and channel. @default 'cornserve:' */
  prefix?: string;
  /** A connection owned by the caller: used for commands (scripts get defined on it), never closed by us. */
  connection?: Redis;
  /** A command with no reply after this long rejects with StoreUnavailableError. @default 5000 */
  commandTimeoutMs?: number;
}

type Listener = (change: StoreChange) => void;
type Hash = Record<string, string>;

/** Reconnect forever, quickly at first, then once a second. */
const retryStrategy = (times: number) => Math.min(100 * 2 ** (times - 1), 1000);

/** Redis replies that mean "not now" rather than "wrong". */
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|TRYAGAIN|CLUSTERDOWN|READONLY)/;

export class RedisStore implements Store {
  private readonly keys: StoreKeys;
  private readonly redis: Redis;
  private readonly shared: boolean;
  private readonly script: RunScript;
  private readonly listeners = new Set<Listener>();
  private subscriber: Redis | undefined;
  private subscribed: Promise<void> | undefined;
  private readyPromise: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  constructor(opts: RedisStoreOptions) {
    this.keys = storeKeys(opts.prefix);
    this.shared = opts.connection !== undefined;
    this.redis =
      opts.connection ??
      new Redis(opts.url, {
        maxRetriesPerRequest: 1,
        enableOfflineQueue: true,
        connectTimeout: 3000,
        commandTimeout: opts.commandTimeoutMs ?? 5000,
        retryStrategy,
        connectionName: 'cornserve-store',
      });
    if (!this.shared) this.redis.on('error', onConnectionError('commands'));
    this.script = defineScripts(this.redis);
  }

  /** The prefix of every key and channel this store uses. */
  get prefix(): string {
    return this.keys.prefix;
  }

  ready(): Promise<void> {
    this.readyPromise ??= this.call('ready', () => this.redis.ping()).then(
      () => undefined,
      (err: unknown) => {
        this.readyPromise = undefined; // a later ready() tries again
        throw err;
      },
    );
    return this.readyPromise;
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.listeners.clear();
      await Promise.all([this.subscriber && quit(this.subscriber), this.shared ? undefined : quit(this.redis)]);
    })();
    return this.closing;
  }

  // ---------- apps ----------

  async putApp(app: AppRecord): Promise<void> {
    const { state, ...record } = app;
    const conflict = (await this.call('putApp', () =>
      this.script('put-app', [this.keys.app(app.appId), this.keys.apps, this.keys.appNames], [
        app.appId,
        JSON.stringify(record),
        state,
        JSON.stringify(appNames(app)),
        ...this.publishing({ kind: 'app', id: app.appId, op: 'put' }),
      ]),
    )) as string[];
    if (conflict.length > 0) throw new StoreConflictError(`app name "${conflict[0]}"`, conflict[1]!);
  }

  // ---------- task definitions ----------

  async putTaskDefinition(def: TaskDefinitionRecord): Promise<'created' | 'same' | 'conflict'> {
    const key = this.keys.taskDefinitions;
    // HSETNX decides atomically; a second writer of the same name compares digests with what won.
    const created = await this.call('putTaskDefinition', () => this.redis.hsetnx(key, def.name, JSON.stringify(def)));
    if (created === 1) {
      await this.call('putTaskDefinition', () => this.redis.publish(this.keys.changes, JSON.stringify({ kind: 'task-definition', id: def.name, op: 'put' })));
      return 'created';
    }
    const stored = await this.call('putTaskDefinition', () => this.redis.hget(key, def.name));
    return stored !== null && (JSON.parse(stored) as TaskDefinitionRecord).digest === def.digest ? 'same' : 'conflict';
  }

  async listTaskDefinitions(): Promise<TaskDefinitionRecord[]> {
    const all = await this.call('listTaskDefinitions', () => this.redis.hvals(this.keys.taskDefinitions));
    return all.map((v) => JSON.parse(v) as TaskDefinitionRecord);
  }

  async deleteTaskDefinition(name: string): Promise<boolean> {
    const removed = await this.call('deleteTaskDefinition', () => this.redis.hdel(this.keys.taskDefinitions, name));
    if (removed > 0) await this.call('deleteTaskDefinition', () => this.redis.publish(this.keys.changes, JSON.stringify({ kind: 'task-definition', id: name, op: 'delete' })));
    return removed > 0;
  }

  async getApp(appId: string): Promise<AppRecord | undefined> {
    return decodeApp(await this.call('getApp', () => this.redis.hgetall(this.keys.app(appId))));
  }

  async findApp(idOrName: string): Promise<AppRecord | undefined> {
    const byId = await this.getApp(idOrName);
    if (byId) return byId;
    const owner = await this.call('findApp', () => this.redis.hget(this.keys.appNames, idOrName));
    return owner === null ? undefined : this.getApp(owner);
  }

  async listApps(): Promise<AppRecord[]> {
    const hashes = await this.hashesOf('listApps', this.keys.apps, (id) => this.keys.app(id));
    return sortApps(defined(hashes.map(decodeApp)));
  }

  async setAppState(appId: string, state: AppState): Promise<void> {
    const change: StoreChange = { kind: 'app', id: appId, op: 'put' };
    const updated = await this.call('setAppState', () =>
      this.script('update-hash', [this.keys.app(appId)], [...this.publishing(change), 'state', state]),
    );
    if (updated === 0) throw new StoreNotFoundError('app', appId);
  }

  async deleteApp(appId: string): Promise<boolean> {
    const deleted = await this.call('deleteApp', () =>
      this.script('delete-app', [this.keys.app(appId), this.keys.apps, this.keys.appNames], [
        appId,
        ...this.publishing({ kind: 'app', id: appId, op: 'delete' }),
      ]),
    );
    return deleted === 1;
  }

  // ---------- unit tasks ----------

  async acquireTask(task: Omit<UnitTaskRecord, 'usage'>): Promise<{ record: UnitTaskRecord; created: boolean }> {
    const { state, devices, updatedAt, ...record } = task;
    const [created, flat] = (await this.call('acquireTask', () =>
      this.script('acquire-task', [this.keys.task(task.taskId), this.keys.tasks], [
        task.taskId,
        JSON.stringify(record),
        state,
        JSON.stringify(devices),
        updatedAt,
        ...this.publishing({ kind: 'task', id: task.taskId, op: 'put' }),
      ]),
    )) as [number, string[]];
    return { record: decodeTask(pairsToHash(flat))!, created: created === 1 };
  }

  async releaseTask(taskId: string): Promise<number | undefined> {
    const usage = await this.call('releaseTask', () =>
      this.script('release-task', [this.keys.task(taskId)], this.publishing({ kind: 'task', id: taskId, op: 'put' })),
    );
    return usage === null ? undefined : Number(usage);
  }

  async getTask(taskId: string): Promise<UnitTaskRecord | undefined> {
    return decodeTask(await this.call('getTask', () => this.redis.hgetall(this.keys.task(taskId))));
  }

  async listTasks(): Promise<UnitTaskRecord[]> {
    const hashes = await this.hashesOf('listTasks', this.keys.tasks, (id) => this.keys.task(id));
    return sortTasks(defined(hashes.map(decodeTask)));
  }

  async updateTask(taskId: string, patch: Partial<Pick<UnitTaskRecord, 'state' | 'devices'>>): Promise<void> {
    const fields: string[] = ['updatedAt', String(Date.now())];
    if (patch.state !== undefined) fields.push('state', patch.state);
    if (patch.devices !== undefined) fields.push('devices', JSON.stringify(patch.devices));
    const change: StoreChange = { kind: 'task', id: taskId, op: 'put' };
    const updated = await this.call('updateTask', () =>
      this.script('update-hash', [this.keys.task(taskId)], [...this.publishing(change), ...fields]),
    );
    if (updated === 0) throw new StoreNotFoundError('task', taskId);
  }

  async deleteTask(taskId: string): Promise<boolean> {
    const deleted = await this.call('deleteTask', () =>
      this.script('delete-indexed', [this.keys.task(taskId), this.keys.tasks], [
        taskId,
        ...this.publishing({ kind: 'task', id: taskId, op: 'delete' }),
      ]),
    );
    return deleted === 1;
  }

  // ---------- device inventory ----------

  async putInventory(nodes: NodeInventory[]): Promise<void> {
    await this.call('putInventory', () => this.redis.set(this.keys.inventory, JSON.stringify(nodes)));
  }

  async getInventory(): Promise<NodeInventory[]> {
    const json = await this.call('getInventory', () => this.redis.get(this.keys.inventory));
    return json === null ? [] : (JSON.parse(json) as NodeInventory[]);
  }

  // ---------- routes ----------

  async putExecutor(route: ExecutorRoute): Promise<void> {
    const { state, outstanding, ...record } = route;
    const { executorId, taskId } = route;
    await this.call('putExecutor', () =>
      this.script('put-executor', [this.keys.executor(executorId), this.keys.executors, this.keys.executorsOf(taskId)], [
        executorId,
        taskId,
        JSON.stringify(record),
        state,
        outstanding,
        this.keys.executorsOfPrefix,
        ...this.publishing({ kind: 'route', id: executorId, taskId, op: 'put' }),
      ]),
    );
  }

  async getExecutor(executorId: string): Promise<ExecutorRoute | undefined> {
    return decodeExecutor(await this.call('getExecutor', () => this.redis.hgetall(this.keys.executor(executorId))));
  }

  async listExecutors(taskId?: string): Promise<ExecutorRoute[]> {
    const index = taskId === undefined ? this.keys.executors : this.keys.executorsOf(taskId);
    const hashes = await this.hashesOf('listExecutors', index, (id) => this.keys.executor(id));
    return sortExecutors(defined(hashes.map(decodeExecutor)));
  }

  async setExecutorState(executorId: string, state: ExecutorState): Promise<void> {
    const updated = await this.call('setExecutorState', () =>
      this.script('set-executor-state', [this.keys.executor(executorId)], [executorId, state, this.keys.changes]),
    );
    if (updated === 0) throw new StoreNotFoundError('executor', executorId);
  }

  async adjustOutstanding(executorId: string, delta: number): Promise<number> {
    assertIntegerDelta(delta);
    const count = await this.call('adjustOutstanding', () =>
      this.script('adjust-outstanding', [this.keys.executor(executorId)], [delta]),
    );
    if (count === null) throw new StoreNotFoundError('executor', executorId);
    return Number(count);
  }

  async deleteExecutor(executorId: string): Promise<boolean> {
    const deleted = await this.call('deleteExecutor', () =>
      this.script('delete-executor', [this.keys.executor(executorId), this.keys.executors], [
        executorId,
        this.keys.executorsOfPrefix,
        this.keys.changes,
      ]),
    );
    return deleted === 1;
  }

  // ---------- profiles and live service ----------

  async putProfile(profile: TaskProfile): Promise<void> {
    await this.call('putProfile', () => this.redis.hset(this.keys.profiles, profileField(profile.taskKey, profile.deviceKind), JSON.stringify(profile)));
  }

  async getProfile(taskKey: string, deviceKind: string): Promise<TaskProfile | undefined> {
    const json = await this.call('getProfile', () => this.redis.hget(this.keys.profiles, profileField(taskKey, deviceKind)));
    return json === null ? undefined : (JSON.parse(json) as TaskProfile);
  }

  async listProfiles(): Promise<TaskProfile[]> {
    const all = await this.call('listProfiles', () => this.redis.hvals(this.keys.profiles));
    return sortProfiles(all.map((json) => JSON.parse(json) as TaskProfile));
  }

  async putExecutorStats(stats: ExecutorLiveStats): Promise<void> {
    await this.call('putExecutorStats', () => this.redis.hset(this.keys.executorStats, stats.executorId, JSON.stringify(stats)));
  }

  async listExecutorStats(taskId?: string): Promise<ExecutorLiveStats[]> {
    const all = (await this.call('listExecutorStats', () => this.redis.hvals(this.keys.executorStats))).map((json) => JSON.parse(json) as ExecutorLiveStats);
    return sortExecutorStats(taskId === undefined ? all : all.filter((s) => s.taskId === taskId));
  }

  // ---------- sidecar tensor metadata ----------

  async putChunk(meta: TensorChunkMeta): Promise<void> {
    const change: StoreChange = { kind: 'tensor', id: meta.id, chunk: meta.chunk, op: 'put' };
    await this.call('putChunk', () =>
      this.redis
        .multi()
        .set(this.keys.chunk(meta.id, meta.chunk), JSON.stringify(meta))
        .sadd(this.keys.chunksOf(meta.id), meta.chunk)
        .zadd(this.keys.chunkExpiry, meta.expiresAt, chunkMember(meta.id, meta.chunk))
        .publish(this.keys.changes, JSON.stringify(change))
        .exec()
        .then(execResults),
    );
  }

  async getChunk(id: string, chunk: number): Promise<TensorChunkMeta | undefined> {
    const json = await this.call('getChunk', () => this.redis.get(this.keys.chunk(id, chunk)));
    return json === null ? undefined : (JSON.parse(json) as TensorChunkMeta);
  }

  async listChunks(id?: string): Promise<TensorChunkMeta[]> {
    return this.call('listChunks', async () => {
      const keys =
        id === undefined
          ? (await this.redis.zrange(this.keys.chunkExpiry, '0', '-1')).map((member) => this.keys.chunkByMember(member))
          : (await this.redis.smembers(this.keys.chunksOf(id))).map((n) => this.keys.chunk(id, Number(n)));
      if (keys.length === 0) return [];
      const jsons = await this.redis.mget(...keys);
      return sortChunks(defined(jsons.map((json) => (json === null ? undefined : (JSON.parse(json) as TensorChunkMeta)))));
    });
  }

  async deleteChunk(id: string, chunk: number): Promise<boolean> {
    const deleted = await this.call('deleteChunk', () =>
      this.script('delete-chunk', [this.keys.chunk(id, chunk), this.keys.chunksOf(id), this.keys.chunkExpiry], [
        chunk,
        chunkMember(id, chunk),
        ...this.publishing({ kind: 'tensor', id, chunk, op: 'delete' }),
      ]),
    );
    return deleted === 1;
  }

  async takeExpiredChunks(now: number): Promise<TensorChunkMeta[]> {
    const jsons = (await this.call('takeExpiredChunks', () =>
      this.script('take-expired-chunks', [this.keys.chunkExpiry], [
        now,
        this.keys.chunkPrefix,
        this.keys.chunksOfPrefix,
        this.keys.changes,
      ]),
    )) as string[];
    return sortChunks(jsons.map((json) => JSON.parse(json) as TensorChunkMeta));
  }

  // ---------- sidecar registry ----------

  async registerSidecar(record: SidecarRecord): Promise<void> {
    const { leaseExpiresAt, ...rest } = record;
    // One sidecar per node registers: reading the old instance first leaves no race that matters.
    const old = await this.getSidecar(record.node);
    if (old && old.instance !== record.instance) await this.removeSidecar(old.node, old.instance, '+inf');
    const change: StoreChange = { kind: 'sidecar', id: record.node, op: 'put' };
    await this.call('registerSidecar', () =>
      this.redis
        .multi()
        .set(this.keys.sidecar(record.node), JSON.stringify(rest))
        .zadd(this.keys.sidecarLeases, leaseExpiresAt, record.node)
        .publish(this.keys.changes, JSON.stringify(change))
        .exec()
        .then(execResults),
    );
  }

  async renewSidecar(node: string, instance: string, leaseExpiresAt: number): Promise<boolean> {
    const renewed = await this.call('renewSidecar', () =>
      this.script('renew-sidecar', [this.keys.sidecar(node), this.keys.sidecarLeases], [node, instance, leaseExpiresAt]),
    );
    return renewed === 1;
  }

  async getSidecar(node: string): Promise<SidecarRecord | undefined> {
    const [json, lease] = await this.call('getSidecar', () =>
      Promise.all([this.redis.get(this.keys.sidecar(node)), this.redis.zscore(this.keys.sidecarLeases, node)]),
    );
    return json === null || lease === null ? undefined : decodeSidecar(json, lease);
  }

  async listSidecars(): Promise<SidecarRecord[]> {
    return this.call('listSidecars', async () => {
      const leases = await this.redis.zrange(this.keys.sidecarLeases, '0', '-1', 'WITHSCORES');
      if (leases.length === 0) return [];
      const nodes = leases.filter((_, i) => i % 2 === 0);
      const jsons = await this.redis.mget(...nodes.map((n) => this.keys.sidecar(n)));
      return sortSidecars(defined(jsons.map((json, i) => (json === null ? undefined : decodeSidecar(json, leases[2 * i + 1]!)))));
    });
  }

  async deleteSidecar(node: string, instance: string): Promise<boolean> {
    return (await this.removeSidecar(node, instance, '+inf')) !== undefined;
  }

  async takeExpiredSidecars(now: number): Promise<SidecarRecord[]> {
    const due = await this.call('takeExpiredSidecars', () => this.redis.zrangebyscore(this.keys.sidecarLeases, '-inf', now, 'WITHSCORES'));
    const taken: SidecarRecord[] = [];
    for (let i = 0; i < due.length; i += 2) {
      const rec = await this.getSidecar(due[i]!);
      // The script checks the lease again: a sidecar that renewed in between stays.
      if (rec && (await this.removeSidecar(rec.node, rec.instance, now))) taken.push(rec);
    }
    return sortSidecars(taken);
  }

  /** delete-sidecar.lua: the registration and the node's chunk entries, if `instance` holds it and its lease ends by `latestLease`. */
  private async removeSidecar(node: string, instance: string, latestLease: number | '+inf'): Promise<string | undefined> {
    const json = await this.call('deleteSidecar', () =>
      this.script('delete-sidecar', [this.keys.sidecar(node), this.keys.sidecarLeases, this.keys.chunkExpiry], [
        node,
        instance,
        latestLease,
        this.keys.chunkPrefix,
        this.keys.chunksOfPrefix,
        this.keys.changes,
      ]),
    );
    return typeof json === 'string' ? json : undefined;
  }

  // ---------- change notifications ----------

  subscribe(listener: Listener): Unsubscribe {
    if (this.closing) throw new StoreClosedError();
    const own: Listener = (change) => listener(change); // a distinct entry even if the same function subscribes twice
    this.listeners.add(own);
    void this.listen().catch(() => undefined); // failures surface through subscriptionReady() and the log
    return () => void this.listeners.delete(own);
  }

  async subscriptionReady(): Promise<void> {
    if (this.closing) throw new StoreClosedError();
    if (this.listeners.size === 0 && !this.subscribed) return;
    await this.call('subscribe', () => this.listen());
  }

  /** Creates the subscriber connection on first use and SUBSCRIBEs; after a failure the next call tries again. */
  private listen(): Promise<void> {
    if (this.subscribed) return this.subscribed;
    const sub = (this.subscriber ??= this.createSubscriber());
    this.subscribed = sub.subscribe(this.keys.changes).then(
      () => undefined,
      (err: unknown) => {
        this.subscribed = undefined;
        if (!this.closing) log.warn({ err: String(err) }, 'store subscribe failed; retrying when the connection is back');
        throw err;
      },
    );
    return this.subscribed;
  }

  private createSubscriber(): Redis {
    const sub = this.redis.duplicate({ connectionName: 'cornserve-store-sub' });
    sub.on('error', onConnectionError('subscriber'));
    // ioredis resubscribes what was subscribed before a disconnect; a SUBSCRIBE that failed is ours to retry.
    sub.on('ready', () => {
      if (this.listeners.size > 0 && !this.subscribed && !this.closing) void this.listen().catch(() => undefined);
    });
    sub.on('message', (channel: string, message: string) => {
      if (channel !== this.keys.changes) return;
      let change: StoreChange;
      try {
        change = JSON.parse(message) as StoreChange;
      } catch {
        return log.warn({ message }, 'ignoring a malformed store change');
      }
      for (const listener of [...this.listeners]) {
        if (this.listeners.has(listener)) deliver(listener, { ...change });
      }
    });
    return sub;
  }

  // ---------- load counters ----------

  async addCounters(deltas: Array<{ name: string; delta: number }>, ttlMs: number): Promise<void> {
    for (const { delta } of deltas) assertIntegerDelta(delta);
    if (deltas.length === 0) return;
    // MULTI: every increment and its expiry apply together (a counter never outlives its TTL without its add).
    await this.call('addCounters', () => {
      const multi = this.redis.multi();
      for (const { name, delta } of deltas) multi.incrby(this.keys.counter(name), delta).pexpire(this.keys.counter(name), Math.max(1, Math.round(ttlMs)));
      return multi.exec().then(execResults);
    });
  }

  async readCounters(names: string[]): Promise<number[]> {
    if (names.length === 0) return [];
    const values = await this.call('readCounters', () => this.redis.mget(names.map((n) => this.keys.counter(n))));
    return values.map((v) => (v === null ? 0 : Number(v)));
  }

  // ---------- autoscaling state ----------

  async putAutoscale(record: AutoscaleRecord): Promise<void> {
    const change: StoreChange = { kind: 'autoscale', id: record.taskId, op: 'put' };
    await this.call('putAutoscale', () =>
      this.redis.multi().hset(this.keys.autoscale, record.taskId, JSON.stringify(record)).publish(this.keys.changes, JSON.stringify(change)).exec().then(execResults),
    );
  }

  async getAutoscale(taskId: string): Promise<AutoscaleRecord | undefined> {
    const json = await this.call('getAutoscale', () => this.redis.hget(this.keys.autoscale, taskId));
    return json === null ? undefined : (JSON.parse(json) as AutoscaleRecord);
  }

  async patchAutoscale(taskId: string, patch: AutoscalePatch, options: AutoscalePatchOptions = {}): Promise<AutoscaleRecord | undefined> {
    const change: StoreChange = { kind: 'autoscale', id: taskId, op: 'put' };
    const args = [taskId, ...this.publishing(change), JSON.stringify(patch), options.create ? JSON.stringify(options.create) : '', JSON.stringify(options.unlessSource ?? [])];
    const json = await this.call('patchAutoscale', () => this.script('patch-autoscale', [this.keys.autoscale], args));
    return typeof json === 'string' ? (JSON.parse(json) as AutoscaleRecord) : undefined;
  }

  async listAutoscale(): Promise<AutoscaleRecord[]> {
    const all = await this.call('listAutoscale', () => this.redis.hgetall(this.keys.autoscale));
    return Object.keys(all)
      .sort()
      .map((id) => JSON.parse(all[id]!) as AutoscaleRecord);
  }

  async deleteAutoscale(taskId: string): Promise<boolean> {
    const change: StoreChange = { kind: 'autoscale', id: taskId, op: 'delete' };
    const deleted = await this.call('deleteAutoscale', () => this.redis.hdel(this.keys.autoscale, taskId));
    if (deleted === 1) await this.call('deleteAutoscale', () => this.redis.publish(this.keys.changes, JSON.stringify(change)));
    return deleted === 1;
  }

  async wakeTask(taskId: string): Promise<void> {
    const change: StoreChange = { kind: 'wake', id: taskId, op: 'put' };
    await this.call('wakeTask', () => this.redis.publish(this.keys.changes, JSON.stringify(change)));
  }

  // ---------- generation ----------

  async claimEpoch(candidate: string): Promise<string> {
    const [, inForce] = (await this.call('claimEpoch', () => this.redis.multi().setnx(this.keys.epoch, candidate).get(this.keys.epoch).exec().then(execResults))) as [number, string];
    return inForce;
  }

  // ---------- plumbing ----------

  /** ARGV tail shared by the scripts: the channel and the change to publish on it. */
  private publishing(change: StoreChange): [string, string] {
    return [this.keys.changes, JSON.stringify(change)];
  }

  /** The hashes of every id in an index set (ids whose hash vanished meanwhile give {}). */
  private hashesOf(what: string, index: string, keyOf: (id: string) => string): Promise<Hash[]> {
    return this.call(what, async () => {
      const ids = await this.redis.smembers(index);
      if (ids.length === 0) return [];
      const pipeline = this.redis.pipeline();
      for (const id of ids) pipeline.hgetall(keyOf(id));
      return execResults(await pipeline.exec()) as Hash[];
    });
  }

  /** Runs one store operation: refuses after close, and turns connection failures into StoreUnavailableError. */
  private async call<T>(what: string, op: () => Promise<T>): Promise<T> {
    if (this.closing) throw new StoreClosedError();
    try {
      return await op();
    } catch (err) {
      if (this.closing) throw new StoreClosedError();
      throw unavailable(what, err) ?? err;
    }
  }
}

/** ioredis's own messages for "the connection is not there" (it gives them no class or code). */
const CONNECTION_LOST = /^(Connection is closed|Command timed out|Stream isn't writeable|connect E|Socket timeout)/;
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** StoreUnavailableError for errors that mean "cannot reach Redis now"; undefined for real errors (bugs). */
function unavailable(what: string, err: unknown): StoreUnavailableError | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as { code?: unknown }).code;
  const transient =
    err.name === 'MaxRetriesPerRequestError' ||
    (err.name === 'ReplyError' ? TRANSIENT_REPLY.test(err.message) : CONNECTION_LOST.test(err.message)) ||
    (typeof code === 'string' && NETWORK_CODES.has(code));
  return transient ? new StoreUnavailableError(what, { cause: err }) : undefined;
}

/** MULTI / pipeline results: throws the first command error, returns the replies. */
function execResults(results: Array<[Error | null, unknown]> | null): unknown[] {
  if (results === null) throw new Error('transaction aborted');
  return results.map(([err, value]) => {
    if (err) throw err;
    return value;
  });
}

async function quit(connection: Redis): Promise<void> {
  if (connection.status === 'ready') {
    try {
      await connection.quit();
      return;
    } catch {
      // fall through: drop the socket
    }
  }
  connection.disconnect();
}

/** ioredis emits 'error' on every failed reconnect; log the first of a streak only. */
function onConnectionError(which: string) {
  let last = '';
  return (err: Error) => {
    if (err.message === last) return;
    last = err.message;
    log.warn({ err: err.message, connection: which }, 'store connection error');
  };
}

function pairsToHash(flat: string[]): Hash {
  const hash: Hash = {};
  for (let i = 0; i + 1 < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
  return hash;
}

const defined = <T>(values: Array<T | undefined>): T[] => values.filter((v): v is T => v !== undefined);

function decodeApp(h: Hash): AppRecord | undefined {
  if (h.record === undefined) return undefined;
  return { ...(JSON.parse(h.record) as Omit<AppRecord, 'state'>), state: h.state as AppState };
}

function decodeTask(h: Hash): UnitTaskRecord | undefined {
  if (h.record === undefined) return undefined;
  return {
    ...(JSON.parse(h.record) as Omit<UnitTaskRecord, 'state' | 'devices' | 'updatedAt' | 'usage'>),
    state: h.state as UnitTaskRecord['state'],
    devices: JSON.parse(h.devices ?? '[]') as UnitTaskRecord['devices'],
    updatedAt: Number(h.updatedAt),
    usage: Number(h.usage),
  };
}

function decodeExecutor(h: Hash): ExecutorRoute | undefined {
  if (h.record === undefined) return undefined;
  return {
    ...(JSON.parse(h.record) as Omit<ExecutorRoute, 'state' | 'outstanding'>),
    state: h.state as ExecutorState,
    outstanding: Number(h.outstanding),
  };
}

const decodeSidecar = (json: string, lease: string): SidecarRecord => ({ ...(JSON.parse(json) as Omit<SidecarRecord, 'leaseExpiresAt'>), leaseExpiresAt: Number(lease) });
