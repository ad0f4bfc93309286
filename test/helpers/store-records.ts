/**
 * Sample Store records for tests: valid, distinct per call (pass a suffix), and overridable field by field; and a
 * recorder of the states a route goes through.
 */
import type { AppRecord, ExecutorRoute, ExecutorState, SidecarRecord, Store, TensorChunkMeta, UnitTaskRecord } from '../../lib/store.js';

export function sampleApp(n: string | number, overrides: Partial<AppRecord> = {}): AppRecord {
  return {
    appId: `app-${String(n).padStart(32, '0')}`,
    name: `app${n}`,
    aliases: [`alias-${n}`],
    source: `export default defineApp({ name: 'app${n}' });`,
    taskIds: [`encodertask-${n}`],
    state: 'not ready',
    createdAt: 1_700_000_000_000,
    ...overrides,
  };
}

export function sampleTask(n: string | number, overrides: Partial<Omit<UnitTaskRecord, 'usage'>> = {}): Omit<UnitTaskRecord, 'usage'> {
  return {
    taskId: `encodertask-${n}`,
    key: `EncoderTask|eric|{"model_id":"m${n}"}`,
    taskClass: 'EncoderTask',
    task: { id: `enc${n}`, descriptor: 'eric', config: { model_id: `m${n}`, modality: 'image' } },
    state: 'deploying',
    devices: [],
    updatedAt: 1_700_000_000_000,
    ...overrides,
  };
}

export function sampleRoute(n: string | number, taskId: string, overrides: Partial<ExecutorRoute> = {}): ExecutorRoute {
  return {
    executorId: `exec-${n}`,
    taskId,
    url: `http://127.0.0.1:${9000 + Number.parseInt(String(n), 36) % 1000}`,
    sidecarRanks: [0],
    devices: [{ node: 'node-a', globalRank: 0, localRank: 0 }],
    state: 'starting',
    outstanding: 0,
    startedAt: 1_700_000_000_000,
    ...overrides,
  };
}

export function sampleChunk(id: string, chunk: number, overrides: Partial<TensorChunkMeta> = {}): TensorChunkMeta {
  return {
    id,
    chunk,
    node: 'node-a',
    producerRank: 0,
    location: { kind: 'shm', segment: '/cornserve-node-a', offset: chunk * 4096, length: 4096 },
    kind: 'tensor',
    dtype: 'f32',
    shape: [1, 1024],
    size: 4096,
    expiresAt: 1_700_000_060_000,
    ...overrides,
  };
}

export function sampleSidecar(node: string, overrides: Partial<SidecarRecord> = {}): SidecarRecord {
  return {
    node,
    instance: `${node}-i1`,
    ranks: [0, 1],
    host: '10.0.0.1',
    peerPort: 10001,
    httpPort: 10000,
    leaseExpiresAt: 1_700_000_010_000,
    ...overrides,
  };
}

/** Every state the route of `executorId` goes through from now on (read back after each put), in order. */
export function recordRouteStates(store: Store, executorId: string): ExecutorState[] {
  const seen: ExecutorState[] = [];
  store.subscribe((c) => {
    if (c.kind === 'route' && c.id === executorId && c.op === 'put') void store.getExecutor(executorId).then((r) => r && seen.push(r.state));
  });
  return seen;
}
