/**
 * Execution descriptors: how a unit task maps to its executor.
 *  - the task manager uses `launch` to start executors (through the platform);
 *  - the dispatcher uses `request` / `response` to turn one invocation into one executor HTTP call.
 * Descriptors are registered per root unit-task class; a task's `descriptor` field picks a named one
 * (null = the default). See registry.ts.
 */
import type { UnitTask } from '../functions/sdk/index.js';
import type { DeviceRef } from './store.js';

export interface LaunchSpec {
  /** Executor kind, for logs and image names: 'echo' | 'eric' | 'geri' | 'llm' | ... */
  kind: string;
  /** Local platform: the module to run with `node --import tsx`, relative to the repository root. */
  entry: string;
  /** Kubernetes platform: the container image (without registry prefix/tag). */
  image: string;
  /** Arguments for the entry/image. Ports, ranks and sidecar address are appended by the platform via env (see ExecutorEnv). */
  args: string[];
  env?: Record<string, string>;
  /** Devices one executor uses (its tensor-parallel degree). */
  devicesPerExecutor: number;
  /** Health endpoint polled until 200 (default /health). */
  healthPath?: string;
  /** Its executors move tensors through their node's sidecar: they are not routed to while that sidecar is down. */
  movesTensors?: boolean;
}

/**
 * Environment every executor process receives from the platform (names are part of the contract):
 *   CORNSERVE_EXECUTOR_ID, CORNSERVE_TASK_ID, PORT (HTTP port to listen on, loopback locally),
 *   CORNSERVE_SIDECAR_RANKS (comma-separated global ranks = device ranks), CORNSERVE_NODE,
 *   CORNSERVE_SIDECAR_URL (the node's sidecar, when one runs), CORNSERVE_STORE_URL (redis URL, when used),
 *   CORNSERVE_DEVICE_KIND ('cpu' | 'cuda') and CORNSERVE_DEVICE_ORDINALS (comma-separated device ordinals as the
 *   process sees them, one per tensor-parallel rank: the node-local ranks locally; 0..N-1 on Kubernetes, where a
 *   container given `nvidia.com/gpu: N` sees its GPUs as 0..N-1, CUDA_VISIBLE_DEVICES semantics),
 *   OTEL_* passthrough.
 */
export const EXECUTOR_ENV = {
  executorId: 'CORNSERVE_EXECUTOR_ID',
  taskId: 'CORNSERVE_TASK_ID',
  port: 'PORT',
  ranks: 'CORNSERVE_SIDECAR_RANKS',
  node: 'CORNSERVE_NODE',
  sidecar: 'CORNSERVE_SIDECAR_URL',
  store: 'CORNSERVE_STORE_URL',
  deviceKind: 'CORNSERVE_DEVICE_KIND',
  deviceOrdinals: 'CORNSERVE_DEVICE_ORDINALS',
  /** '1' = run on the CPU (loudly) when GPUs were assigned but onnxruntime has no CUDA provider (`up --allow-cpu-fallback`). */
  allowCpuFallback: 'CORNSERVE_ALLOW_CPU_FALLBACK',
} as const;

export interface ExecutorRequest {
  /** Path on the executor, e.g. '/embeddings'. Always POST with a JSON body. */
  path: string;
  body: unknown;
}

export interface InvocationResult {
  /** The invocation's output as JSON (a streaming output is `{}`). */
  output: unknown;
  /** NDJSON lines of the streaming output (each line one chunk, already in the task's chunk format). */
  stream?: AsyncIterable<string>;
}

export interface TaskDescriptor<T extends UnitTask = UnitTask> {
  /** Descriptor name; 'default' for the default one. */
  readonly name: string;
  /** Root unit-task class name this descriptor serves, e.g. 'EncoderTask'. */
  readonly taskClass: string;
  /** Executor name for logs, process names and Kubernetes objects (lowercase, dashes). */
  executorName(task: T): string;
  launch(task: T): LaunchSpec;
  /**
   * Builds the executor request for one invocation. `input` and `output` are the typed, wired objects
   * (DataForwards carry their source ranks and destination rank groups).
   */
  request(task: T, input: unknown, output: unknown): ExecutorRequest;
  /** Reads the executor's reply (status already checked to be 2xx) into the invocation's output. */
  response(task: T, output: unknown, res: Response): Promise<InvocationResult>;
  /**
   * Profiling (control/taskmanager/profiler.ts). Absent = the task cannot be profiled (its capacity then comes
   * from live service times alone). `sample` gives one representative invocation (input and output as `request`
   * takes them); `devicesPerExecutorOptions` the devices-per-executor choices to profile (default: the launch's).
   */
  profiling?: {
    sample(task: T): { input: unknown; output: unknown };
    devicesPerExecutorOptions?(task: T): number[];
  };
}
