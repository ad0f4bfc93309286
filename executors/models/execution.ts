/**
 * This process's execution device: the platform's assignment (environment) checked against the providers this
 * onnxruntime-node has, once per process (worker threads and engine processes inherit the environment and resolve
 * the same answer). Executors call `startExecution` at start-up so a missing CUDA provider is a start-up error;
 * the loader calls `processExecution` for every session.
 */
import ort from 'onnxruntime-node';
import { logger } from '../../lib/log.js';
import {
  DEVICE_ENV, cpuFallbackAllowed, describeExecution, deviceAssignmentFromEnv, resolveExecution, type ExecutionDevice,
} from './session-options.js';

let cached: ExecutionDevice | undefined;

export function processExecution(): ExecutionDevice {
  cached ??= resolveExecution(deviceAssignmentFromEnv(process.env), ort.listSupportedBackends(), cpuFallbackAllowed(process.env));
  return cached;
}

/**
 * Resolves the execution device at start-up (throws ExecutionProviderError when GPUs were assigned but CUDA is not
 * installed and fallback is not allowed); with fallback, warns loudly. `allowCpuFallback` (the executor's
 * --allow-cpu-fallback) is written to the environment so worker threads and child processes agree.
 */
export function startExecution(opts: { allowCpuFallback?: boolean } = {}): ExecutionDevice {
  if (opts.allowCpuFallback) process.env[DEVICE_ENV.allowCpuFallback] = '1';
  cached = undefined;
  const e = processExecution();
  const log = logger('execution');
  if (e.cpuFallback) log.warn({ ...describeExecution(e) }, `RUNNING ON THE CPU ALTHOUGH GPUs WERE ASSIGNED: ${e.fallbackReason}`);
  else log.info(describeExecution(e), 'execution provider');
  return e;
}

/** The executors' flag (one wording everywhere). */
export const ALLOW_CPU_FALLBACK_FLAG = ['--allow-cpu-fallback', `run on the CPU (loud warning, /health execution.cpuFallback) when GPUs were assigned but the CUDA execution provider is not installed (default: $${DEVICE_ENV.allowCpuFallback})`] as const;

/** startExecution for an executor's main: a bad assignment or missing provider is logged and the process exits 1. */
export function startExecutionOrExit(allowCpuFallback: boolean | undefined): ExecutionDevice {
  try {
    return startExecution(allowCpuFallback ? { allowCpuFallback } : {});
  } catch (e) {
    logger('execution').error({ err: (e as Error).message }, 'cannot start: execution device unavailable');
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(1);
  }
}
