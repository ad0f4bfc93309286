/**
 * Validation of the simulator against the live platform: the same workload (same seed, so the same arrival
 * times) through `cornserve bench` on a live local platform and through `cornserve simulate`, compared on
 * median and p99 E2E latency and request throughput. Used by the CI test (short) and the `make bench` row.
 */
import type { RunResults } from '../bench/report/results.js';

/** The echo app with a fixed 200 ms service time and 2 requests at once per executor (test/fixtures/apps). */
export const VALIDATION_APP_FILE = 'test/fixtures/apps/echo-timed.ts';
export const VALIDATION_APP = 'echo-timed';
export const VALIDATION_SERVICE_MS = 200;

/**
 * The platform's own per-request overhead on this machine now: the median of `samples` serial requests minus
 * the service time. The README's 1.29 ms is a quiet machine's; a loaded one adds tens of ms, and the
 * simulator's gateway/dispatcher hop constant must be the machine's of the run it is compared with.
 */
export async function measureOverheadMs(invoke: () => Promise<unknown>, samples = 7): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await invoke();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return Math.max(0, ms[Math.floor(samples / 2)]! - VALIDATION_SERVICE_MS);
}

/** The simulated twin of a live local run of the validation app: 1 node × `devices` local devices. */
export function validationScenario(o: { rate: number; requests: number; seed: number; devices: number; overheadMs?: number }) {
  return {
    name: VALIDATION_APP,
    ...(o.overheadMs !== undefined ? { overheadMs: o.overheadMs } : {}),
    cluster: { nodes: 1, devicesPerNode: o.devices, device: 'local-cpu', intraNode: 'local', interNode: 'local' },
    app: { file: VALIDATION_APP_FILE, api: 'invoke', request: { text: 'hello' } },
    workload: { requestRate: o.rate, numRequests: o.requests, seed: o.seed },
  };
}

export interface Comparison {
  metric: string;
  live: number;
  simulated: number;
  /** |simulated − live| / live, in percent. */
  errorPct: number;
}

export function compareRuns(live: RunResults, sim: RunResults): Comparison[] {
  return (['median_e2el_ms', 'p99_e2el_ms', 'request_throughput'] as const).map((metric) => {
    const l = live[metric] as number;
    const s = sim[metric] as number;
    return { metric, live: l, simulated: s, errorPct: (Math.abs(s - l) / l) * 100 };
  });
}

export const comparisonText = (c: readonly Comparison[]) => c.map((x) => `${x.metric}: live ${x.live.toFixed(2)}, simulated ${x.simulated.toFixed(2)} (${x.errorPct.toFixed(1)}% apart)`).join('; ');
