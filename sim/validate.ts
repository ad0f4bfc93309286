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
export async function measureOverheadMs(invoke: () => Promise<unknown>, samples = 7, serviceMs = VALIDATION_SERVICE_MS): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await invoke();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  return Math.max(0, ms[Math.floor(samples / 2)]! - serviceMs);
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

/**
 * The tiny-model validation: the mllm app (Eric + tiny-vision, the LLM executor + tiny-lm-a) on one local node,
 * text and 56×56 image chat requests, against the simulator with the `local-cpu` preset fitted on this machine
 * (`cornserve simulate fit`). 56×56 is one the encoder keeps as it is (Qwen2-VL resize to multiples of 28), so
 * the simulated patch count (⌈56/14⌉² = 16) is the encoder's.
 */
export const TINY_APP = 'mllm';
export const TINY_APP_FILE = 'functions/apps/mllm.ts';
export const TINY_WORKLOAD = { mix: 'text:0.5,image:0.5', inputLen: 32, outputLen: 16, imageSize: '56x56' };

export function tinyValidationScenario(o: { rate: number; requests: number; seed: number; devices: number; overheadMs?: number; mix?: string }) {
  return {
    name: TINY_APP,
    ...(o.overheadMs !== undefined ? { overheadMs: o.overheadMs } : {}),
    cluster: { nodes: 1, devicesPerNode: o.devices, device: 'local-cpu', intraNode: 'local', interNode: 'local' },
    app: { file: TINY_APP_FILE, api: 'chat' },
    deployment: { mode: 'manual', default: 1 }, // one executor per task, as `up` deploys the app
    workload: { ...TINY_WORKLOAD, ...(o.mix ? { mix: o.mix } : {}), requestRate: o.rate, numRequests: o.requests, seed: o.seed },
  };
}

/** `cornserve bench` flags for the live side of the tiny-model validation. */
export const tinyBenchArgs = (o: { rate: number; requests: number; seed: number }, dir: string) => [
  '--api', 'chat', '--model', TINY_APP, '--mix', TINY_WORKLOAD.mix, '--input-len', String(TINY_WORKLOAD.inputLen), '--output-len', String(TINY_WORKLOAD.outputLen),
  '--image-size', TINY_WORKLOAD.imageSize, '--request-rate', String(o.rate), '--num-requests', String(o.requests), '--seed', String(o.seed), '--result-dir', dir, '--no-plots',
];

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
