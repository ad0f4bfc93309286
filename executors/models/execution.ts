/**
 * This process's execution device: the platform's assignment (environment) checked against the provider libraries
 * installed beside onnxruntime-node (providers.ts) and, at start-up, proven by a probe session on every assigned
 * ordinal (provider-probe.ts). The executor's main decides once (`startExecution`) and writes the decision to
 * the environment, so its worker threads and engine processes use the same device without probing again; the
 * loader calls `processExecution` for every session.
 */
import { z } from 'zod';
import { logger } from '../../lib/log.js';
import { probeProvider } from './provider-probe.js';
import { providerFiles, type GpuProvider } from './providers.js';
import {
  DEVICE_ENV, applyProbes, cpuFallbackAllowed, describeExecution, deviceAssignmentFromEnv, resolveExecution,
  type ExecutionDevice, type ProbeOutcome,
} from './session-options.js';

/** The main process's decision, inherited by its worker threads and child processes. */
export const RESOLVED_EXECUTION_ENV = 'CORNSERVE_RESOLVED_EXECUTION';

const ResolvedExecution = z.object({
  requested: z.enum(['cpu', 'cuda']),
  provider: z.enum(['cpu', 'cuda', 'tensorrt', 'webgpu']),
  ordinals: z.array(z.number().int().nonnegative()),
  cpuFallback: z.boolean(),
  fallbackReason: z.string().optional(),
});

let cached: ExecutionDevice | undefined;

export function processExecution(): ExecutionDevice {
  if (cached) return cached;
  const inherited = process.env[RESOLVED_EXECUTION_ENV];
  cached = inherited
    ? ResolvedExecution.parse(JSON.parse(inherited)) as ExecutionDevice
    : resolveExecution(deviceAssignmentFromEnv(process.env), (p) => providerFiles(p), cpuFallbackAllowed(process.env));
  return cached;
}

export type Probe = (provider: GpuProvider, ordinal: number) => Promise<ProbeOutcome>;

/**
 * Decides the execution device at start-up: the provider's libraries must be installed and a probe session must
 * run on each assigned ordinal; otherwise ExecutionProviderError (its code, the missing file or library, the fix),
 * or with CPU fallback a loud warning. `allowCpuFallback` (the executor's --allow-cpu-fallback) and the decision
 * are written to the environment so worker threads and child processes agree.
 */
export async function startExecution(opts: { allowCpuFallback?: boolean; probe?: Probe } = {}): Promise<ExecutionDevice> {
  if (opts.allowCpuFallback) process.env[DEVICE_ENV.allowCpuFallback] = '1';
  delete process.env[RESOLVED_EXECUTION_ENV];
  cached = undefined;
  const log = logger('execution');
  const allow = cpuFallbackAllowed(process.env);
  const assignment = deviceAssignmentFromEnv(process.env);
  let e = resolveExecution(assignment, (p) => providerFiles(p), allow);
  if (e.provider !== 'cpu') {
    const provider = e.provider;
    log.info({ provider, ordinals: e.ordinals }, 'probing the execution provider on each assigned device');
    const probe = opts.probe ?? ((p: GpuProvider, o: number) => probeProvider(p, o));
    const probes = await Promise.all([...new Set(e.ordinals)].map((o) => probe(provider, o)));
    e = applyProbes(assignment, e, probes, allow);
  }
  cached = e;
  process.env[RESOLVED_EXECUTION_ENV] = JSON.stringify(e);
  if (e.cpuFallback) log.warn({ ...describeExecution(e) }, `RUNNING ON THE CPU ALTHOUGH GPUs WERE ASSIGNED: ${e.fallbackReason}`);
  else log.info(describeExecution(e), 'execution provider');
  return e;
}

/** The executors' flag (one wording everywhere). */
export const ALLOW_CPU_FALLBACK_FLAG = ['--allow-cpu-fallback', `run on the CPU (loud warning, /health execution.cpuFallback) when GPUs were assigned but their execution provider is not installed or fails its start-up probe (default: $${DEVICE_ENV.allowCpuFallback})`] as const;

/** startExecution for an executor's main: a bad assignment or unusable provider is logged and the process exits 1. */
export async function startExecutionOrExit(allowCpuFallback: boolean | undefined): Promise<ExecutionDevice> {
  try {
    return await startExecution(allowCpuFallback ? { allowCpuFallback } : {});
  } catch (e) {
    const code = (e as { code?: string }).code;
    logger('execution').error({ err: (e as Error).message, ...(code ? { code } : {}) }, 'cannot start: execution device unavailable');
    process.stderr.write(`${code ? `${code}: ` : ''}${(e as Error).message}\n`);
    process.exit(1);
  }
}
