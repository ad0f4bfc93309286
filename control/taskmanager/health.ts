/**
 * Health probes: one GET <url><path> classified for the health policy (probeExecutor), and polling until it
 * answers 200, bounded by a timeout and cancellable (waitHealthy).
 */
import { sleep, TimeoutError } from '../../lib/wait.js';
import type { ProbeResult } from './health-policy.js';

export interface HealthWaitOptions {
  timeoutMs: number;
  intervalMs: number;
  signal?: AbortSignal;
}

/**
 * One probe: ok on 200; failed on another status, with the error code the executor gave (`{error: {code}}`,
 * e.g. EXECUTOR_ENGINE_DEAD); unanswered when refused, reset or not answered within `timeoutMs`.
 */
export async function probeExecutor(url: string, path: string, timeoutMs = 1_000): Promise<ProbeResult> {
  let res: Response;
  try {
    res = await fetch(new URL(path, url), { signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    const err = e as Error & { cause?: { code?: string } };
    return { kind: 'unanswered', reason: err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : err.cause?.code ?? err.message };
  }
  if (res.status === 200) {
    await res.body?.cancel();
    return { kind: 'ok' };
  }
  const text = await res.text().catch(() => '');
  let code: unknown;
  try {
    code = (JSON.parse(text) as { error?: { code?: unknown } }).error?.code;
  } catch {
    // not JSON: the status says enough
  }
  return { kind: 'failed', reason: `GET ${path} answered ${res.status}${typeof code === 'string' ? ` ${code}` : ''}` };
}

/** One probe: true on 200, false on anything else (refused, other status, no answer within `timeoutMs`). */
export async function probeHealth(url: string, path: string, timeoutMs = 1_000): Promise<boolean> {
  return (await probeExecutor(url, path, timeoutMs)).kind === 'ok';
}

/** Resolves once the endpoint answers 200; TimeoutError after `timeoutMs`; rejects with the signal's reason when aborted. */
export async function waitHealthy(url: string, path: string, { timeoutMs, intervalMs, signal }: HealthWaitOptions): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    signal?.throwIfAborted();
    if (await probeHealth(url, path, Math.min(1_000, Math.max(50, end - Date.now())))) return;
    if (Date.now() >= end) throw new TimeoutError(`health of ${url}${path}`, timeoutMs);
    await sleep(intervalMs, signal);
  }
}
