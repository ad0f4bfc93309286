/**
 * Where an executor's ONNX Runtime sessions compute: the ONE place that chooses the execution provider.
 * The platform tells each executor its device kind and ordinals (CORNSERVE_DEVICE_KIND, CORNSERVE_DEVICE_ORDINALS;
 * lib/descriptor.ts EXECUTOR_ENV) and, for GPUs, which provider to use (CORNSERVE_EXECUTION_PROVIDER:
 * cuda, the default, tensorrt or webgpu); the loader (loader.ts) asks `sessionOptionsFor` for every session.
 * Pure: no I/O. Whether a provider is installed comes in as `providerFiles` (providers.ts: its libraries beside the
 * onnxruntime binding); whether it runs comes in as probe results (provider-probe.ts, a session on each ordinal).
 */
import type ort from 'onnxruntime-node';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { EXECUTION_PROVIDER_ENV, GPU_PROVIDERS, installFix, type GpuProvider, type ProviderFiles } from './providers.js';

export type DeviceKind = 'cpu' | 'cuda';
export type ExecutionProvider = 'cpu' | GpuProvider;

/** What the platform assigned to one executor process. */
export interface DeviceAssignment {
  kind: DeviceKind;
  /** Device ordinals as the process sees them (CUDA_VISIBLE_DEVICES semantics); one per tensor-parallel rank. */
  ordinals: number[];
  /** The provider for GPU devices (default cuda). */
  provider?: GpuProvider;
}

/** How this process's sessions actually compute, after checking the installed providers. */
export interface ExecutionDevice {
  /** What the platform asked for. */
  requested: DeviceKind;
  /** What the sessions use. */
  provider: ExecutionProvider;
  ordinals: number[];
  /** True when GPUs were asked for but the executor runs on the CPU (--allow-cpu-fallback). */
  cpuFallback: boolean;
  /** Why it fell back (absent otherwise). */
  fallbackReason?: string;
}

/** One session's device: the kind, the ordinal of its rank, and CPU threads. */
export interface SessionDevice {
  provider: ExecutionProvider;
  ordinal: number;
  threads?: number;
}

export const CPU_EXECUTION: ExecutionDevice = Object.freeze({ requested: 'cpu', provider: 'cpu', ordinals: [0], cpuFallback: false });

export const DEVICE_ENV = {
  kind: EXECUTOR_ENV.deviceKind,
  ordinals: EXECUTOR_ENV.deviceOrdinals,
  provider: EXECUTION_PROVIDER_ENV,
  allowCpuFallback: EXECUTOR_ENV.allowCpuFallback,
} as const;

export const ExecutionProviderCode = {
  /** The provider's libraries are not beside the onnxruntime binding. */
  MISSING: 'EXECUTION_PROVIDER_MISSING',
  /** The libraries are there but a session on the device failed, crashed or hung (a system library, driver or GPU). */
  PROBE_FAILED: 'EXECUTION_PROVIDER_PROBE_FAILED',
} as const;
export type ExecutionProviderCode = (typeof ExecutionProviderCode)[keyof typeof ExecutionProviderCode];

export class ExecutionProviderError extends Error {
  override readonly name = 'ExecutionProviderError';
  constructor(
    readonly code: ExecutionProviderCode,
    message: string,
    readonly details: { provider: GpuProvider; missing: string[]; fix: string },
  ) {
    super(message);
  }
}

const FALLBACK_HINT = 'or start the executor with --allow-cpu-fallback to run on the CPU';

/** Reads the platform's assignment from the environment; absent = CPU. Bad values throw naming the variable. */
export function deviceAssignmentFromEnv(env: Record<string, string | undefined>): DeviceAssignment {
  const kind = (env[DEVICE_ENV.kind] ?? 'cpu').trim() || 'cpu';
  if (kind !== 'cpu' && kind !== 'cuda') throw new RangeError(`${DEVICE_ENV.kind} must be 'cpu' or 'cuda', got '${kind}'`);
  const raw = (env[DEVICE_ENV.ordinals] ?? '').trim();
  // No ordinals given (an executor started by hand): CPU ranks need none; a GPU executor uses device 0.
  const ordinals = raw ? raw.split(',').map((s) => Number(s.trim())) : kind === 'cpu' ? [] : [0];
  if (ordinals.some((o) => !Number.isInteger(o) || o < 0)) throw new RangeError(`${DEVICE_ENV.ordinals} must be comma-separated non-negative integers, got '${raw}'`);
  const provider = (env[DEVICE_ENV.provider] ?? '').trim();
  if (provider && !GPU_PROVIDERS.includes(provider as GpuProvider)) throw new RangeError(`${DEVICE_ENV.provider} must be one of ${GPU_PROVIDERS.join(', ')}, got '${provider}'`);
  return { kind, ordinals, ...(kind === 'cuda' && provider ? { provider: provider as GpuProvider } : {}) };
}

const truthy = (v: string | undefined) => v !== undefined && /^(1|true|yes)$/i.test(v.trim());

/** Whether CPU fallback was allowed through the environment (the executors' --allow-cpu-fallback also sets it). */
export const cpuFallbackAllowed = (env: Record<string, string | undefined>) => truthy(env[DEVICE_ENV.allowCpuFallback]);

const gpuExecution = (a: DeviceAssignment, provider: GpuProvider): ExecutionDevice => ({ requested: 'cuda', provider, ordinals: a.ordinals, cpuFallback: false });

/** The CPU execution of a GPU assignment that may fall back, or the error when it may not. */
function refuse(a: DeviceAssignment, err: ExecutionProviderError, allowCpuFallback: boolean): ExecutionDevice {
  if (!allowCpuFallback) throw err;
  return { requested: 'cuda', provider: 'cpu', ordinals: a.ordinals, cpuFallback: true, fallbackReason: err.message.split('; fix: ')[0]! };
}

/**
 * Checks an assignment against the provider libraries installed (`providerFiles`, providers.ts): GPU asked for and
 * the provider's libraries missing → ExecutionProviderError (EXECUTION_PROVIDER_MISSING) naming the files and the
 * install command, or with `allowCpuFallback` a CPU execution that says why.
 */
export function resolveExecution(
  assignment: DeviceAssignment,
  providerFiles: (provider: GpuProvider) => ProviderFiles,
  allowCpuFallback: boolean,
): ExecutionDevice {
  if (assignment.kind === 'cpu') return { requested: 'cpu', provider: 'cpu', ordinals: assignment.ordinals, cpuFallback: false };
  const provider = assignment.provider ?? 'cuda';
  const files = providerFiles(provider);
  if (files.installed) return gpuExecution(assignment, provider);
  const fix = installFix(provider);
  const err = new ExecutionProviderError(
    ExecutionProviderCode.MISSING,
    `${provider} execution provider not installed: GPUs ${assignment.ordinals.join(',')} were assigned, but ${files.missing.join(', ')} ${files.missing.length > 1 ? 'are' : 'is'} not in ${files.dir}; fix: ${fix}, ${FALLBACK_HINT}`,
    { provider, missing: files.missing, fix },
  );
  return refuse(assignment, err, allowCpuFallback);
}

/** A start-up probe's answer for one ordinal (provider-probe.ts). */
export type ProbeOutcome =
  | { ok: true; provider: GpuProvider; ordinal: number }
  | { ok: false; provider: GpuProvider; ordinal: number; error: string; missing?: string; fix: string };

/**
 * The execution once every ordinal was probed: all passed → unchanged; one failed → ExecutionProviderError
 * (EXECUTION_PROVIDER_PROBE_FAILED) carrying onnxruntime's own error and the fix, or the CPU with `allowCpuFallback`.
 */
export function applyProbes(assignment: DeviceAssignment, execution: ExecutionDevice, probes: readonly ProbeOutcome[], allowCpuFallback: boolean): ExecutionDevice {
  const failed = probes.find((p): p is Extract<ProbeOutcome, { ok: false }> => !p.ok);
  if (!failed) return execution;
  const err = new ExecutionProviderError(
    ExecutionProviderCode.PROBE_FAILED,
    `${failed.provider} execution provider cannot run on device ${failed.ordinal}${failed.missing ? ` (missing: ${failed.missing})` : ''}: ${failed.error}; fix: ${failed.fix}, ${FALLBACK_HINT}`,
    { provider: failed.provider, missing: failed.missing ? [failed.missing] : [], fix: failed.fix },
  );
  return refuse(assignment, err, allowCpuFallback);
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
 * (`tensorrt` then `cuda` with the ordinal, `cuda`, `webgpu`, or `cpu`) and, when given, the intra-op thread count.
 */
export function sessionOptionsFor(device: SessionDevice, base: ort.InferenceSession.SessionOptions = {}): ort.InferenceSession.SessionOptions {
  const gpu = (name: 'cuda' | 'tensorrt') => ({ name, deviceId: device.ordinal });
  // WebGPU takes no device id in onnxruntime-node: Dawn picks the adapter (docs/gpus.md).
  const executionProviders =
    device.provider === 'tensorrt' ? [gpu('tensorrt'), gpu('cuda')]
      : device.provider === 'cuda' ? [gpu('cuda')]
        : device.provider === 'webgpu' ? [{ name: 'webgpu' as const }]
          : ['cpu'];
  return { ...base, ...(device.threads ? { intraOpNumThreads: device.threads } : {}), executionProviders };
}

/** For /health and `cornserve tasks`: `cuda:0,1`, `webgpu:0`, `cpu`, or `cpu (GPUs cuda:0 asked for)`. */
export function describeExecution(e: ExecutionDevice): { provider: string; device: string; cpuFallback: boolean; fallbackReason?: string } {
  const gpus = `${e.requested}:${e.ordinals.join(',')}`;
  const device = e.cpuFallback ? `cpu (GPUs ${gpus} asked for)` : e.provider === 'cpu' ? 'cpu' : `${e.provider === 'webgpu' ? 'webgpu' : 'cuda'}:${e.ordinals.join(',')}`;
  return { provider: e.provider, device, cpuFallback: e.cpuFallback, ...(e.fallbackReason ? { fallbackReason: e.fallbackReason } : {}) };
}
