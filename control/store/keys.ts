/**
 * Every Redis key and channel the RedisStore uses, in one place: no other module concatenates key strings.
 * All of them start with the store's prefix (default "cornserve:"), so one Redis can hold several
 * deployments (or tests) side by side, and `SCAN MATCH <prefix>*` finds everything a store owns.
 *
 * Lua scripts that must reach keys they only learn while running (an executor's task set, the chunks
 * that expired) receive the matching `...Prefix` from here as an argument and append the id themselves.
 */

export interface StoreKeys {
  readonly prefix: string;
  /** Hash {record, state} for one app. */
  app(appId: string): string;
  /** Set of every app id. */
  readonly apps: string;
  /** Hash: task definition name -> TaskDefinitionRecord JSON. */
  readonly taskDefinitions: string;
  /** Hash: app name or alias -> app id (names and aliases share one namespace). */
  readonly appNames: string;
  /** Hash {record, state, usage, devices, updatedAt} for one unit task. */
  task(taskId: string): string;
  /** Set of every task id. */
  readonly tasks: string;
  /** JSON array of NodeInventory. */
  readonly inventory: string;
  /** Hash {record, taskId, state, outstanding} for one executor. */
  executor(executorId: string): string;
  /** Set of every executor id. */
  readonly executors: string;
  /** Set of the executor ids serving one task. */
  executorsOf(taskId: string): string;
  readonly executorsOfPrefix: string;
  /** Hash: profileField(taskKey, deviceKind) -> TaskProfile JSON. */
  readonly profiles: string;
  /** Hash: executor id -> ExecutorLiveStats JSON. */
  readonly executorStats: string;
  /** JSON TensorChunkMeta of one chunk. */
  chunk(id: string, chunk: number): string;
  /** The chunk key for a member of the chunk-expiry set. */
  chunkByMember(member: string): string;
  readonly chunkPrefix: string;
  /** Set of the chunk numbers stored for one DataForward id. */
  chunksOf(id: string): string;
  readonly chunksOfPrefix: string;
  /** Sorted set: member chunkMember(id, n), score expiresAt. Also the index of every chunk. */
  readonly chunkExpiry: string;
  /** JSON SidecarRecord of one node's sidecar, without its lease (which is its score in sidecarLeases). */
  sidecar(node: string): string;
  /** Sorted set: member node, score leaseExpiresAt. Also the index of every registered sidecar. */
  readonly sidecarLeases: string;
  /** Integer load counter (autoscaling signals), with a TTL. */
  counter(name: string): string;
  /** Hash: task id -> AutoscaleRecord JSON. */
  readonly autoscale: string;
  /** String: the store's generation (claimEpoch); absent after the data was lost. */
  readonly epoch: string;
  /** Pub/sub channel carrying StoreChange JSON. */
  readonly changes: string;
  /** SCAN MATCH pattern for every key under the prefix. */
  readonly allKeysPattern: string;
}

export function storeKeys(prefix = 'cornserve:'): StoreKeys {
  const p = prefix;
  return {
    prefix: p,
    app: (appId) => `${p}app:${appId}`,
    apps: `${p}apps`,
    taskDefinitions: `${p}task-definitions`,
    appNames: `${p}app-names`,
    task: (taskId) => `${p}task:${taskId}`,
    tasks: `${p}tasks`,
    inventory: `${p}inventory`,
    executor: (executorId) => `${p}exec:${executorId}`,
    executors: `${p}executors`,
    executorsOf: (taskId) => `${p}execs:${taskId}`,
    executorsOfPrefix: `${p}execs:`,
    profiles: `${p}profiles`,
    executorStats: `${p}exec-stats`,
    chunk: (id, chunk) => `${p}chunk:${chunkMember(id, chunk)}`,
    chunkByMember: (member) => `${p}chunk:${member}`,
    chunkPrefix: `${p}chunk:`,
    chunksOf: (id) => `${p}chunks:${id}`,
    chunksOfPrefix: `${p}chunks:`,
    chunkExpiry: `${p}chunk-expiry`,
    sidecar: (node) => `${p}sidecar:${node}`,
    sidecarLeases: `${p}sidecar-leases`,
    counter: (name) => `${p}counter:${name}`,
    autoscale: `${p}autoscale`,
    epoch: `${p}epoch`,
    changes: `${p}changes`,
    allKeysPattern: `${p.replace(/[*?[\]\\]/g, '\\$&')}*`,
  };
}

/** Field of one profile in the profiles hash (task keys may hold any character, so JSON keeps the pair apart). */
export const profileField = (taskKey: string, deviceKind: string) => JSON.stringify([taskKey, deviceKind]);

/** Member of the chunk-expiry set; the Lua scripts split it at the last ':' (ids are hex). */
export const chunkMember = (id: string, chunk: number) => `${id}:${chunk}`;
