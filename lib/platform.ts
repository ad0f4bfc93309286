/**
 * Where processes run. `local` = child processes on this machine (the embedded default);
 * `kubernetes` = Deployments for executors and Knative Services for app functions.
 */
import type { LaunchSpec } from './descriptor.js';
import type { DeviceRef, TaskDefinitionRecord, Unsubscribe } from './store.js';

export interface NodeDevices {
  node: string;
  /** Number of accelerators (virtual devices locally). */
  devices: number;
  /** What the devices are: 'cuda' = NVIDIA GPUs (ordinals = local ranks), 'cpu' = virtual devices. @default 'cpu' */
  deviceKind?: DeviceKind;
}

export type DeviceKind = 'cpu' | 'cuda';

export interface ExecutorSpec {
  executorId: string; // unique; stable for the executor's life
  taskId: string;
  node: string;
  devices: DeviceRef[]; // all on `node`
  launch: LaunchSpec;
  /** Extra environment (the platform adds the EXECUTOR_ENV variables itself). */
  env?: Record<string, string>;
  /**
   * (Added.) Preferred port (local platform): a restarted executor asks for its previous port so its URL, and so
   * its route, stay the same; a free one is chosen when it is taken. Kubernetes ignores it (Service URLs are stable).
   */
  port?: number;
}

export interface ExecutorInstance {
  executorId: string;
  taskId: string;
  url: string; // base URL of its HTTP API
  node: string;
  devices: DeviceRef[];
}

export interface AppFunctionSpec {
  appId: string;
  name: string;
  /** The app's TypeScript source (the runtime transpiles it). */
  source: string;
  /** Runtime entry + args (local) / image (kubernetes), as for executors. devicesPerExecutor is ignored. */
  launch: LaunchSpec;
  env?: Record<string, string>;
}

export interface AppFunctionInstance {
  appId: string;
  url: string;
}

export type PlatformEvent =
  | { kind: 'executor-exited'; executorId: string; taskId: string; code: number | null; signal: string | null; expected: boolean; logTail?: string[] }
  | { kind: 'app-function-exited'; appId: string; code: number | null; signal: string | null; expected: boolean; logTail?: string[] };
// (Added: `logTail` = the last lines the process printed, when the platform has them; for error messages.)

export interface Platform {
  readonly kind: 'local' | 'kubernetes';
  /** The nodes and how many devices each has. */
  listNodes(): Promise<NodeDevices[]>;
  /** Starts one executor; resolves once its process/pod exists (not necessarily healthy). */
  startExecutor(spec: ExecutorSpec): Promise<ExecutorInstance>;
  /** Stops it (SIGTERM, then SIGKILL after graceMs); resolves when it is gone. Unknown ids are a no-op. */
  stopExecutor(executorId: string, options?: { graceMs?: number }): Promise<void>;
  deployAppFunction(spec: AppFunctionSpec): Promise<AppFunctionInstance>;
  deleteAppFunction(appId: string): Promise<void>;
  /** Exits and failures of what the platform started (expected = we asked for it). */
  onEvent(listener: (e: PlatformEvent) => void): Unsubscribe;
  /** Stops everything it started. Idempotent. */
  shutdown(): Promise<void>;
  /**
   * (Added.) Mirrors a registered unit task definition where the platform keeps one (Kubernetes: TaskDefinition and
   * ExecutionDescriptor custom resources). Applying the same record twice changes nothing. Absent/no-op locally.
   */
  storeTaskDefinition?(record: TaskDefinitionRecord): Promise<void>;
  /** (Added.) Removes what storeTaskDefinition wrote; unknown names are a no-op. */
  removeTaskDefinition?(name: string): Promise<void>;
}

/** (Added.) The part of a Platform that app functions need: what the gateway uses, in process or through the resource manager's HTTP API. */
export type AppFunctionPlatform = Pick<Platform, 'deployAppFunction' | 'deleteAppFunction' | 'onEvent'>;
