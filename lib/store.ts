/**
 * The Store: every piece of control-plane state, behind one interface.
 *
 * Two backends pass one conformance suite (test/unit/control/store/conformance.ts):
 *  - MemoryStore: the embedded default when everything runs inside one `cornserve up`;
 *  - RedisStore: ioredis, every key under one prefix, multi-key transitions atomic (Lua / MULTI).
 *
 * Records are plain JSON values. Methods that change a count (usage, outstanding load) are atomic
 * in both backends: concurrent callers never lose an update.
 */

import type { ExecutorLiveStats, TaskProfile } from './autoscale.js';

// ---------- apps ----------

export type AppState = 'not ready' | 'ready';

export interface AppRecord {
  appId: string; // "app-<32 hex>"
  name: string; // from defineApp({name}); unique among registered apps
  aliases: string[]; // extra names (CLI --alias, OpenAI `model`)
  source: string; // the TypeScript source as registered
  taskIds: string[]; // the unit tasks (after dedup) the app uses
  state: AppState;
  createdAt: number; // epoch ms
}

// ---------- unit tasks ----------

export type UnitTaskState = 'deploying' | 'ready' | 'tearing down' | 'failed';

export interface UnitTaskRecord {
  taskId: string; // stable, derived from `key` (see control/store/task-id.ts)
  key: string; // unitTaskKey(task): root class + descriptor + canonical config; equal keys = equivalent tasks
  taskClass: string; // root unit-task class name, e.g. "EncoderTask"
  task: unknown; // the task's JSON ({id, descriptor, config}) as first declared
  state: UnitTaskState;
  usage: number; // number of apps (or sessions) using it; teardown at 0
  devices: DeviceRef[]; // devices currently allocated to it
  updatedAt: number;
}

export interface DeviceRef {
  node: string;
  globalRank: number; // unique across the cluster; also the sidecar rank
  localRank: number; // index on its node
}

// ---------- device inventory (resource manager) ----------

export interface NodeInventory {
  node: string;
  sidecarUrl?: string; // where the node's sidecar listens (control HTTP)
  deviceKind?: 'cpu' | 'cuda'; // what its devices are (absent = cpu); local ranks are the GPU ordinals
  devices: Array<DeviceRef & { owner: string | null }>; // owner = taskId or null when free
}

// ---------- routes (task -> executors) ----------

export type ExecutorState = 'starting' | 'ready' | 'draining' | 'failed';

export interface ExecutorRoute {
  executorId: string;
  taskId: string;
  url: string; // base URL of the executor's HTTP API
  sidecarRanks: number[]; // = global ranks of its devices
  devices: DeviceRef[];
  state: ExecutorState;
  outstanding: number; // in-flight requests routed to it (least-outstanding routing)
  startedAt: number;
}

// ---------- profiles and live service (autoscaling capacity) ----------

export type { TaskProfile } from './autoscale.js';
export type { ExecutorLiveStats } from './autoscale.js';

// ---------- sidecar tensor metadata ----------

export type DType = 'f32' | 'f16' | 'bf16' | 'f64' | 'i64' | 'i32' | 'u8' | 'bool';

export type ChunkLocation =
  | { kind: 'shm'; segment: string; offset: number; length: number } // a slot in a node's shared memory
  | { kind: 'remote'; host: string; port: number }; // fetch over the sidecar byte stream

export interface TensorChunkMeta {
  id: string; // DataForward id (hex)
  chunk: number;
  node: string;
  producerRank: number;
  location: ChunkLocation;
  kind: 'tensor' | 'object';
  dtype?: DType; // tensors only
  shape?: number[]; // tensors only
  size: number; // bytes
  expiresAt: number; // epoch ms; unconsumed data is freed after this
}

// ---------- sidecar registry ----------

/**
 * A running sidecar as it registers itself: which ranks it serves, where its peers reach it, and until when its
 * lease holds. It renews the lease while it runs; past `leaseExpiresAt` it counts as crashed and any sidecar reaps
 * it with its chunk entries (takeExpiredSidecars).
 */
export interface SidecarRecord {
  node: string;
  instance: string; // new at every start: a new instance of a node replaces the old one and what it held
  ranks: number[];
  host: string;
  peerPort: number; // sidecar-to-sidecar TCP
  httpPort: number; // /health, /info, /metrics
  leaseExpiresAt: number; // epoch ms
}

/**
 * A user-defined unit task registered at run time (control/registry): its definition as checked (plain JSON,
 * schemas as JSON Schema, a declarative descriptor), the TypeScript it came from, and a digest of the definition
 * (equal digests = the same registration, so registering again is idempotent).
 */
export interface TaskDefinitionRecord {
  name: string;
  className: string;
  digest: string;
  definition: unknown;
  source: string;
  registeredAt: number;
}

// ---------- autoscaling (control/autoscaler) ----------

/**
 * A task's autoscaling state, kept in the Store so a restarted resource manager finds it again:
 * the policy in force (and who set it), the executor count last decided, the last decision and the last cold start.
 * `policy` undefined = manual scaling (the task was scaled by hand; the autoscaler leaves it alone).
 */
export interface AutoscaleRecord {
  taskId: string;
  policy?: { min: number; max: number; target: number } | { min: number; max: number; sloMs: number };
  /** 'admin' (POST /task/autoscale) outranks 'app' (defineApp autoscaling), which outranks 'default'. */
  source: 'default' | 'app' | 'admin' | 'manual';
  /** Executors last decided (0 when none was made yet). */
  desired: number;
  lastDecision?: { at: number; from: number; to: number; reason: string };
  /** How long the last start from zero executors took (ms), with when it ended. */
  coldStart?: { ms: number; at: number };
}

/** Fields to change in an AutoscaleRecord (`policy: null` removes the policy: manual scaling). */
export type AutoscalePatch = Partial<Omit<AutoscaleRecord, 'taskId' | 'policy'>> & { policy?: AutoscaleRecord['policy'] | null };

export interface AutoscalePatchOptions {
  /** The record to patch when the task has none; absent = a missing record stays missing (undefined is returned). */
  create?: AutoscaleRecord;
  /** A record whose source is one of these is kept unchanged (a policy of higher rank is in force). */
  unlessSource?: Array<AutoscaleRecord['source']>;
}

// ---------- change notifications ----------

export type StoreChange =
  | { kind: 'app'; id: string; op: 'put' | 'delete' }
  | { kind: 'task'; id: string; op: 'put' | 'delete' }
  | { kind: 'route'; id: string; taskId: string; op: 'put' | 'delete' }
  | { kind: 'tensor'; id: string; chunk: number; op: 'put' | 'delete' }
  | { kind: 'sidecar'; id: string; op: 'put' | 'delete' } // id = the sidecar's node
  | { kind: 'task-definition'; id: string; op: 'put' | 'delete' } // id = the definition's name
  | { kind: 'autoscale'; id: string; op: 'put' | 'delete' } // id = task id
  /** A dispatcher holds invocations of a task with no executor and asks for one (scale from zero). Nothing is stored. */
  | { kind: 'wake'; id: string; op: 'put' };

export type Unsubscribe = () => void;

// ---------- the interface ----------

export interface Store {
  /** Resolves once the backend is usable (Redis connected). Idempotent. */
  ready(): Promise<void>;
  /** Idempotent; a shared connection passed in by the caller is never closed. */
  close(): Promise<void>;

  // apps
  putApp(app: AppRecord): Promise<void>;
  getApp(appId: string): Promise<AppRecord | undefined>;
  /** Finds an app by id, name or alias. */
  findApp(idOrName: string): Promise<AppRecord | undefined>;
  listApps(): Promise<AppRecord[]>;
  setAppState(appId: string, state: AppState): Promise<void>;
  deleteApp(appId: string): Promise<boolean>;

  // user-defined unit tasks (the task registry)
  /**
   * Atomically stores `def` unless a definition of that name exists: 'created'; 'same' when the stored one has the
   * same digest (nothing changes); 'conflict' when it differs (nothing changes).
   */
  putTaskDefinition(def: TaskDefinitionRecord): Promise<'created' | 'same' | 'conflict'>;
  listTaskDefinitions(): Promise<TaskDefinitionRecord[]>;
  deleteTaskDefinition(name: string): Promise<boolean>;

  // unit tasks
  /**
   * Atomically: if no task with `record.taskId` exists, stores `record` with usage 1 and returns
   * {created: true}; otherwise increments its usage and returns the stored record, {created: false}.
   */
  acquireTask(record: Omit<UnitTaskRecord, 'usage'>): Promise<{ record: UnitTaskRecord; created: boolean }>;
  /** Atomically decrements usage (never below 0) and returns the new count; undefined if unknown. */
  releaseTask(taskId: string): Promise<number | undefined>;
  getTask(taskId: string): Promise<UnitTaskRecord | undefined>;
  listTasks(): Promise<UnitTaskRecord[]>;
  updateTask(taskId: string, patch: Partial<Pick<UnitTaskRecord, 'state' | 'devices'>>): Promise<void>;
  deleteTask(taskId: string): Promise<boolean>;

  // device inventory
  putInventory(nodes: NodeInventory[]): Promise<void>;
  getInventory(): Promise<NodeInventory[]>;

  // routes
  putExecutor(route: ExecutorRoute): Promise<void>;
  getExecutor(executorId: string): Promise<ExecutorRoute | undefined>;
  listExecutors(taskId?: string): Promise<ExecutorRoute[]>;
  setExecutorState(executorId: string, state: ExecutorState): Promise<void>;
  /** Atomically adds `delta` to the executor's outstanding count and returns the new value. */
  adjustOutstanding(executorId: string, delta: number): Promise<number>;
  deleteExecutor(executorId: string): Promise<boolean>;

  // profiles (by unit-task key and device kind: equivalent tasks of other apps share them) and live service stats
  /** Stores a task's profile, replacing the one of the same taskKey and deviceKind. */
  putProfile(profile: TaskProfile): Promise<void>;
  getProfile(taskKey: string, deviceKind: string): Promise<TaskProfile | undefined>;
  /** Every stored profile, by taskKey then deviceKind. */
  listProfiles(): Promise<TaskProfile[]>;
  /** Stores one executor's live service stats (the dispatcher's EWMAs), replacing the previous ones. */
  putExecutorStats(stats: ExecutorLiveStats): Promise<void>;
  /** Live stats of every executor (of `taskId`), by executor id; stale ones included (readers judge their age). */
  listExecutorStats(taskId?: string): Promise<ExecutorLiveStats[]>;

  // sidecar tensor metadata
  putChunk(meta: TensorChunkMeta): Promise<void>;
  getChunk(id: string, chunk: number): Promise<TensorChunkMeta | undefined>;
  listChunks(id?: string): Promise<TensorChunkMeta[]>;
  deleteChunk(id: string, chunk: number): Promise<boolean>;
  /** Removes and returns every chunk whose expiresAt <= now (entries a live sidecar failed to delete). */
  takeExpiredChunks(now: number): Promise<TensorChunkMeta[]>;

  // sidecar registry
  /**
   * Registers a sidecar (or registers it again). When another instance of the same node was registered, that
   * instance's registration and chunk entries are removed first: its memory is gone.
   */
  registerSidecar(record: SidecarRecord): Promise<void>;
  /** Moves the lease of `node` to `leaseExpiresAt` if `instance` still holds it; false otherwise (register again). No change is published. */
  renewSidecar(node: string, instance: string, leaseExpiresAt: number): Promise<boolean>;
  getSidecar(node: string): Promise<SidecarRecord | undefined>;
  /** Every registered sidecar, by node. */
  listSidecars(): Promise<SidecarRecord[]>;
  /** Removes `instance`'s registration of `node` and every chunk entry naming `node` (a sidecar stopping); false if `instance` does not hold it. */
  deleteSidecar(node: string, instance: string): Promise<boolean>;
  /** Removes and returns every sidecar whose lease ended at or before `now`, with every chunk entry naming its node (crashed sidecars). */
  takeExpiredSidecars(now: number): Promise<SidecarRecord[]>;

  // load counters (autoscaling signals)
  /**
   * Atomically adds each delta to its named counter (created at 0) and makes each counter expire `ttlMs` after
   * this write: time-bucketed counters from several dispatcher replicas add up, and old buckets go away by themselves.
   */
  addCounters(deltas: Array<{ name: string; delta: number }>, ttlMs: number): Promise<void>;
  /** The counters' values, in order; a missing or expired counter is 0. */
  readCounters(names: string[]): Promise<number[]>;

  // autoscaling state
  putAutoscale(record: AutoscaleRecord): Promise<void>;
  getAutoscale(taskId: string): Promise<AutoscaleRecord | undefined>;
  /**
   * Merges `patch` into the task's record atomically (read, merge and write in one step: concurrent patches of
   * different fields all land). Returns the record after it (unchanged when `unlessSource` kept it), or undefined
   * when there is none and no `create`.
   */
  patchAutoscale(taskId: string, patch: AutoscalePatch, options?: AutoscalePatchOptions): Promise<AutoscaleRecord | undefined>;
  listAutoscale(): Promise<AutoscaleRecord[]>;
  deleteAutoscale(taskId: string): Promise<boolean>;
  /** Publishes {kind: 'wake', id: taskId}: a dispatcher holds invocations of a task that has no executor. */
  wakeTask(taskId: string): Promise<void>;

  // generation
  /**
   * Atomically sets the store's generation to `candidate` unless one is set, and returns the generation in force.
   * A store that lost its data (Redis restarted empty) has none: the first caller after the loss sets its candidate,
   * so a process that remembers another generation knows the store it wrote to is gone.
   */
  claimEpoch(candidate: string): Promise<string>;

  /** Change notifications (in-process for memory; pub/sub for Redis, so other processes see them). */
  subscribe(listener: (change: StoreChange) => void): Unsubscribe;
  /**
   * (Added.) Resolves once every listener subscribed so far is live: a change made after this resolves
   * reaches it (Redis: SUBSCRIBE acknowledged). Subscribe, await this, then list, and nothing is missed.
   */
  subscriptionReady(): Promise<void>;
}
