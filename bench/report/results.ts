/**
 * results.json: the run's settings, the aggregates under vLLM benchmark_serving's key names, vLLM's
 * per-request lists (`input_lens`, `output_lens`, `ttfts` and `itls` in seconds, `errors`), and our full
 * per-request records (`requests`, ms) plus the timeline, sweep and soak sections. Pure.
 */
import { aggregate, runDurationS, type Aggregates } from '../metrics/aggregate.js';
import type { RequestRecord } from '../metrics/record.js';
import type { Slo } from '../metrics/slo.js';
import type { SoakMinute, SoakVerdict } from '../metrics/soak.js';
import type { ExecutorSample } from '../plots/specs.js';

/** What the run was asked to do (echoed into results.json). */
export interface RunSettings {
  backend: string;
  api: 'chat' | 'invoke';
  /** The app (invoke) or model (chat). */
  model_id: string;
  base_url: string;
  request_rate: number | 'inf';
  burstiness: number;
  max_concurrency: number | null;
  pattern: string;
  seed: number;
  num_prompts: number | null;
  duration_limit_s: number | null;
  workload: Record<string, unknown>;
  slo: Slo | null;
}

export interface RunResults extends Record<string, unknown> {
  date: string;
  interrupted: boolean;
  /** The run stopped before its end (Ctrl-C or a failure): its files hold what was measured until then. */
  partial: boolean;
  partial_reason?: string;
  requests: RequestRecord[];
}

/** One run's results object (aggregates at the top level, as vLLM writes them). */
export function runResults(settings: RunSettings, records: readonly RequestRecord[], o: { startedAt: number; interrupted: boolean; partialReason?: string; executors?: readonly ExecutorSample[] }): RunResults {
  const durationS = runDurationS(records);
  const agg: Aggregates = aggregate(records, { durationS, ...(settings.slo ? { slo: settings.slo } : {}) });
  const ok = records.filter((r) => r.ok);
  return {
    date: new Date(o.startedAt).toISOString(),
    ...settings,
    ...agg,
    interrupted: o.interrupted,
    partial: o.interrupted,
    ...(o.interrupted ? { partial_reason: o.partialReason ?? 'interrupted (Ctrl-C)' } : {}),
    input_lens: ok.map((r) => r.inputTokens),
    output_lens: ok.map((r) => r.outputTokens),
    ttfts: ok.map((r) => (r.ttftMs ?? NaN) / 1000),
    itls: ok.map((r) => r.itlMs.map((v) => v / 1000)),
    errors: records.map((r) => (r.ok ? '' : `${r.errorCode ?? `HTTP_${r.status}`}: ${r.errorMessage ?? ''}`)),
    requests: [...records],
    ...(o.executors ? { executors_timeline: [...o.executors] } : {}),
  };
}

export interface SweepResults extends Record<string, unknown> {
  runs: RunResults[];
  highest_rate_at_target_attainment: number | null;
  attainment_target: number;
}

export interface SoakResults {
  minutes: SoakMinute[];
  verdict: SoakVerdict;
  /** The platform process whose tree was sampled, or why none was. */
  platform_root: { pid: number; label: string } | { missing: string };
}
