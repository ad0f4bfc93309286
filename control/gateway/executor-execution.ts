/**
 * Where each executor computes, for GET /tasks/list (and so `cornserve tasks`): the `execution` field of its
 * GET /health (executors/models/session-options.ts describeExecution: provider, device, cpuFallback). Read live,
 * bounded, because only the executor knows whether it fell back to the CPU; null when it does not say (echo, or no
 * answer in time).
 */
export interface ExecutionInfo {
  provider: string;
  device: string;
  cpuFallback: boolean;
}

export async function readExecution(url: string, timeoutMs = 1_000): Promise<ExecutionInfo | null> {
  try {
    const res = await fetch(new URL('/health', url), { signal: AbortSignal.timeout(timeoutMs) });
    const body = (await res.json()) as { execution?: Partial<ExecutionInfo> };
    const e = body.execution;
    return e && typeof e.provider === 'string' && typeof e.device === 'string' ? { provider: e.provider, device: e.device, cpuFallback: e.cpuFallback === true } : null;
  } catch {
    return null;
  }
}
