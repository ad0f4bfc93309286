/**
 * Health polling: GET <url><path> until it answers 200, bounded by a timeout and cancellable.
 */
import { sleep, TimeoutError } from '../../lib/wait.js';

export interface HealthWaitOptions {
  timeoutMs: number;
  intervalMs: number;
  signal?: AbortSignal;
}

/** One probe: true on 200, false on anything else (refused, other status, no answer within `timeoutMs`). */
export async function probeHealth(url: string, path: string, timeoutMs = 1_000): Promise<boolean> {
  try {
    const res = await fetch(new URL(path, url), { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
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
