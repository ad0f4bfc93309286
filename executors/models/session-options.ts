/**
 * Where an executor's ONNX Runtime sessions compute: the ONE place that chooses the execution provider.
 * The platform tells each executor its device kind and ordinals (CORNSERVE_DEVICE_KIND, CORNSERVE_DEVICE_ORDINALS;
 * lib/descriptor.ts EXECUTOR_ENV); the loader (loader.ts) asks `sessionOptionsFor` for every session.
 * Pure: no I/O, the supported-backend list is passed in (onnxruntime-node's `listSupportedBackends()`).
 *
 * onnxruntime-node's npm package bundles only the CPU (and WebGPU) providers; CUDA/TensorRT binaries are fetched by
 * its install script when asked (`ONNXRUNTIME_NODE_INSTALL=cuda12`). An executor told to use GPUs whose
 * onnxruntime lacks CUDA fails at start-up (`resolveExecution`), unless CPU fallback is allowed.
 */
import type ort from 'onnxruntime-node';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';

export type DeviceKind = 'cpu' | 'cuda';

/** What the platform assigned to one executor process. */
export interface DeviceAssignment {
  kind: DeviceKind;
  /** Device ordinals as the process sees them (CUDA_VISIBLE_DEVICES semantics); one per tensor-parallel rank. */
  ordinals: number[];
  /** Put TensorRT before CUDA (GPU only). */
  tensorrt?: boolean;
}

/** How this process's sessions actually compute, after checking the installed providers. */
export interface ExecutionDevice {
  /** What the platform asked for. */
  requested: DeviceKind;
  /** What the sessions use. */
  provider: 'cpu' | 'cuda' | 'tensorrt';
  ordinals: number[];
  /** True when GPUs were asked for but the executor runs on the CPU (--allow-cpu-fallback). */
  cpuFallback: boolean;
  /** Why it fell back (absent otherwise). */
  fallbackReason?: string;
}

/** One session's device: the kind, the ordinal of its rank, and CPU threads. */
export interface SessionDevice {
  provider: ExecutionDevice['provider'];
  ordinal: number;
  threads?: number;
}

export const CPU_EXECUTION: ExecutionDevice = Object.freeze({ requested: 'cpu', provider: 'cpu', ordinals: [0], cpuFallback: false });

export const DEVICE_ENV = {
  kind: EXECUTOR_ENV.deviceKind,
  ordinals: EXECUTOR_ENV.deviceOrdinals,
  tensorrt: 'CORNSERVE_TENSORRT',
  allowCpuFallback: EXECUTOR_ENV.allowCpuFallback,
} as const;

export const ORT_CUDA_INSTALL_HINT =
  'reinstall onnxruntime-node with its CUDA binaries (ONNXRUNTIME_NODE_INSTALL=cuda12 npm ci, or npm install onnxruntime-node --onnxruntime-node-install=cuda12, per its README), ' +
  'or start the executor with --allow-cpu-fallback to run on the CPU';

export class ExecutionProviderError extends Error {
  readonly code = 'EXECUTION_PROVIDER_MISSING';
  constructor(message: string) {
    super(message);
    this.name = 'ExecutionProviderError';
  }
}

/** Reads the platform's assignment from the environment; absent = CPU. Bad values throw naming the variable. */
export function deviceAssignmentFromEnv(env: Record<string, string | undefined>): DeviceAssignment {
  const kind = (env[DEVICE_ENV.kind] ?? 'cpu').trim() || 'cpu';
  if (kind !== 'cpu' && kind !== 'cuda') throw new RangeError(`${DEVICE_ENV.kind} must be 'cpu' or 'cuda', got '${kind}'`);
  const raw = (env[DEVICE_ENV.ordinals] ?? '').trim();
  // No ordinals given (an executor started by hand): CPU ranks need none; a GPU executor uses device 0.
  const ordinals = raw ? raw.split(',').map((s) => Number(s.trim())) : kind === 'cpu' ? [] : [0];
  if (ordinals.some((o) => !Number.isInteger(o) || o < 0)) throw new RangeError(`${DEVICE_ENV.ordinals} must be comma-separated non-negative integers, got '${raw}'`);
  const tensorrt = kind === 'cuda' && truthy(env[DEVICE_ENV.tensorrt]);
  return { kind, ordinals, ...(tensorrt ? { tensorrt } : {}) };
}

const truthy = (v: string | undefined) => v !== undefined && /^(1|true|yes)$/i.test(v.trim());

/** Whether CPU fallback was allowed through the environment (the executors' --allow-cpu-fallback also sets it). */
export const cpuFallbackAllowed = (env: Record<string, string | undefined>) => truthy(env[DEVICE_ENV.allowCpuFallback]);

/**
 * Checks an assignment against the providers onnxruntime has (`listSupportedBackends()`): GPU asked for and CUDA
 * (or TensorRT, when wanted) not bundled → ExecutionProviderError naming the cause, or with `allowCpuFallback` a CPU
 * execution that says why.
 */
export function resolveExecution(
  assignment: DeviceAssignment,
  backends: ReadonlyArray<{ name: string; bundled: boolean }>,
  allowCpuFallback: boolean,
): ExecutionDevice {
  if (assignment.kind === 'cpu') return { requested: 'cpu', provider: 'cpu', ordinals: assignment.ordinals, cpuFallback: false };
  const has = (name: string) => backends.some((b) => b.name === name && b.bundled);
  const missing = [...(has('cuda') ? [] : ['CUDA']), ...(assignment.tensorrt && !has('tensorrt') ? ['TensorRT'] : [])];
  if (!missing.length) {
    return { requested: 'cuda', provider: assignment.tensorrt ? 'tensorrt' : 'cuda', ordinals: assignment.ordinals, cpuFallback: false };
  }
  const cause = `${missing.join(' and ')} execution provider not installed: GPUs ${assignment.ordinals.join(',')} were assigned, but this onnxruntime-node has only [${backends.filter((b) => b.bundled).map((b) => b.name).join(', ')}]`;
  if (!allowCpuFallback) throw new ExecutionProviderError(`${cause}; ${ORT_CUDA_INSTALL_HINT}`);
  return { requested: 'cuda', provider: 'cpu', ordinals: assignment.ordinals, cpuFallback: true, fallbackReason: cause };
}

/** The device of tensor-parallel rank `rank` (rank 0 when the executor has one device). */
export function sessionDevice(execution: ExecutionDevice, rank = 0, threads?: number): SessionDevice {
  // CPU "devices" given no ordinals at all (not assigned by a platform): every rank runs on the CPU.
  const ordinal = execution.provider === 'cpu' && execution.ordinals.length === 0 ? rank : execution.ordinals[rank];
  if (ordinal === undefined) throw new RangeError(`rank ${rank} has no device: the executor has ${execution.ordinals.length} (${execution.ordinals.join(',')})`);
  return { provider: execution.provider, ordinal, ...(threads ? { threads } : {}) };
}

/**
 * The session options for one device: the caller's options plus the execution providers
 * (`tensorrt` then `cuda` with the ordinal, or `cpu`) and, when given, the intra-op thread count.
 */
export function sessionOptionsFor(device: SessionDevice, base: ort.InferenceSession.SessionOptions = {}): ort.InferenceSession.SessionOptions {
  const gpu = (name: 'cuda' | 'tensorrt') => ({ name, deviceId: device.ordinal });
  const executionProviders =
    device.provider === 'tensorrt' ? [gpu('tensorrt'), gpu('cuda')] : device.provider === 'cuda' ? [gpu('cuda')] : ['cpu'];
  return { ...base, ...(device.threads ? { intraOpNumThreads: device.threads } : {}), executionProviders };
}

/** For /health and `cornserve tasks`: `cuda:0,1`, `cpu`, or `cpu (fallback from cuda:0)`. */
export function describeExecution(e: ExecutionDevice): { provider: string; device: string; cpuFallback: boolean; fallbackReason?: string } {
  const gpus = `${e.requested}:${e.ordinals.join(',')}`;
  const device = e.cpuFallback ? `cpu (GPUs ${gpus} asked for)` : e.provider === 'cpu' ? 'cpu' : `cuda:${e.ordinals.join(',')}`;
  return { provider: e.provider, device, cpuFallback: e.cpuFallback, ...(e.fallbackReason ? { fallbackReason: e.fallbackReason } : {}) };
}
