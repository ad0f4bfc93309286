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
  /** The executor id that must answer (see probeExecutor). */
  executorId?: string;
}

/**
 * One probe: ok on 200; failed on another status, with the error code the executor gave (`{error: {code}}`,
 * e.g. EXECUTOR_ENGINE_DEAD); unanswered when refused, reset or not answered within `timeoutMs`.
 * With `executorId`, a 200 whose body names another executor (`{executor}`, executors/common/health.ts) is
 * failed: another process holds the port (a free port taken by another starting process before this executor bound
 * it), and routing this executor's requests there would send them to a different task. An answer naming no
 * executor (one started by hand, an external server) is taken as it is.
 */
export async function probeExecutor(url: string, path: string, timeoutMs = 1_000, executorId?: string): Promise<ProbeResult> {
  let res: Response;
  try {
    res = await fetch(new URL(path, url), { signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    const err = e as Error & { cause?: { code?: string } };
    return { kind: 'unanswered', reason: err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : err.cause?.code ?? err.message };
  }
  if (res.status === 200) {
    if (executorId === undefined) {
      await res.body?.cancel();
      return { kind: 'ok' };
    }
    const answered = executorOf(await res.text().catch(() => ''));
    if (answered !== undefined && answered !== executorId) return { kind: 'failed', reason: `GET ${path} was answered by executor ${answered}, not ${executorId}: another process holds its port` };
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

/** The `executor` a health answer names, if any. */
function executorOf(body: string): string | undefined {
  try {
    const id = (JSON.parse(body) as { executor?: unknown }).executor;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

/** One probe: true on 200 (from `executorId`, when given), false on anything else (refused, other status, no answer within `timeoutMs`). */
export async function probeHealth(url: string, path: string, timeoutMs = 1_000, executorId?: string): Promise<boolean> {
  return (await probeExecutor(url, path, timeoutMs, executorId)).kind === 'ok';
}

/** Resolves once the endpoint answers 200; TimeoutError after `timeoutMs`; rejects with the signal's reason when aborted. */
export async function waitHealthy(url: string, path: string, { timeoutMs, intervalMs, signal, executorId }: HealthWaitOptions): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    signal?.throwIfAborted();
    if (await probeHealth(url, path, Math.min(1_000, Math.max(50, end - Date.now())), executorId)) return;
    if (Date.now() >= end) throw new TimeoutError(`health of ${url}${path}`, timeoutMs);
    await sleep(intervalMs, signal);
  }
}
