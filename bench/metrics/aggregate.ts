/**
 * Per-request records → the aggregates vLLM's benchmark_serving reports, under its key names (`completed`,
 * `request_throughput`, `mean_ttft_ms`, `median_ttft_ms`, `p99_ttft_ms`, `std_ttft_ms`, … `request_goodput`),
 * so tools that read its JSON read ours. Percentiles come from an HDR histogram (3 significant digits, so
 * within 0.1% of the exact value); means and standard deviations are exact. Pure.
 */
import { build, type Histogram } from 'hdr-histogram-js';
import { tpotMs, type RequestRecord } from './record.js';
import { sloOutcome, type Slo } from './slo.js';

export const PERCENTILES = [90, 95, 99] as const;
export const LATENCY_METRICS = ['ttft', 'tpot', 'itl', 'e2el'] as const;
export type LatencyMetric = (typeof LATENCY_METRICS)[number];

/** Latency histograms in microseconds, up to one hour. */
export function latencyHistogram(): Histogram {
  return build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 3 });
}

export interface Distribution {
  mean: number;
  median: number;
  std: number;
  /** Keyed by percentile (90, 95, 99). */
  p: Record<number, number>;
  count: number;
}

/** mean, median, std and percentiles of `values` (ms); NaN everywhere when empty. */
export function distribution(values: readonly number[], percentiles: readonly number[] = PERCENTILES): Distribution {
  if (values.length === 0) return { mean: NaN, median: NaN, std: NaN, p: Object.fromEntries(percentiles.map((q) => [q, NaN])), count: 0 };
  const h = latencyHistogram();
  let sum = 0;
  for (const v of values) {
    h.recordValue(Math.max(1, Math.round(v * 1000)));
    sum += v;
  }
  const mean = sum / values.length;
  const std = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length);
  const at = (q: number) => h.getValueAtPercentile(q) / 1000;
  return { mean, median: at(50), std, p: Object.fromEntries(percentiles.map((q) => [q, at(q)])), count: values.length };
}

/** The values of one latency metric over the successful requests (ITL pools every gap, as vLLM does). */
export function metricValues(records: readonly RequestRecord[], metric: LatencyMetric): number[] {
  const ok = records.filter((r) => r.ok);
  switch (metric) {
    case 'ttft': return ok.flatMap((r) => (r.ttftMs === undefined ? [] : [r.ttftMs]));
    case 'e2el': return ok.flatMap((r) => (r.e2elMs === undefined ? [] : [r.e2elMs]));
    case 'tpot': return ok.flatMap((r) => { const t = tpotMs(r); return t === undefined ? [] : [t]; });
    case 'itl': return ok.flatMap((r) => r.itlMs);
  }
}

export interface AggregateOptions {
  /** Wall time of the run in seconds (first send → last completion). */
  durationS: number;
  slo?: Slo;
  percentiles?: readonly number[];
}

/** vLLM's aggregate keys plus ours (`failed`, `errors_by_code`, `slo_attainment`). Latencies in ms. */
export type Aggregates = Record<string, number | null | Record<string, number>>;

export function aggregate(records: readonly RequestRecord[], o: AggregateOptions): Aggregates {
  const ok = records.filter((r) => r.ok);
  const failed = records.length - ok.length;
  const totalIn = ok.reduce((a, r) => a + r.inputTokens, 0);
  const totalOut = ok.reduce((a, r) => a + r.outputTokens, 0);
  const perS = (n: number) => (o.durationS > 0 ? n / o.durationS : 0);
  const errorsByCode: Record<string, number> = {};
  for (const r of records) if (!r.ok) errorsByCode[r.errorCode ?? `HTTP_${r.status}`] = (errorsByCode[r.errorCode ?? `HTTP_${r.status}`] ?? 0) + 1;
  const out: Aggregates = {
    duration: o.durationS,
    completed: ok.length,
    failed,
    total_input_tokens: totalIn,
    total_output_tokens: totalOut,
    request_throughput: perS(ok.length),
    output_throughput: perS(totalOut),
    total_token_throughput: perS(totalIn + totalOut),
    errors_by_code: errorsByCode,
  };
  if (o.slo) {
    const s = sloOutcome(records, o.slo, o.durationS);
    out.request_goodput = s.goodput;
    out.slo_attainment = Number.isNaN(s.attainment) ? null : s.attainment;
  } else {
    out.request_goodput = null;
  }
  const percentiles = o.percentiles ?? PERCENTILES;
  for (const m of LATENCY_METRICS) {
    const d = distribution(metricValues(records, m), percentiles);
    const num = (v: number) => (Number.isNaN(v) ? null : v);
    out[`mean_${m}_ms`] = num(d.mean);
    out[`median_${m}_ms`] = num(d.median);
    out[`std_${m}_ms`] = num(d.std);
    for (const q of percentiles) out[`p${q}_${m}_ms`] = num(d.p[q]!);
  }
  return out;
}

/** Run duration in seconds from records: first send to last completion (0 when nothing was sent). */
export function runDurationS(records: readonly RequestRecord[]): number {
  if (records.length === 0) return 0;
  let start = Infinity;
  let end = -Infinity;
  for (const r of records) {
    start = Math.min(start, r.sentMs);
    end = Math.max(end, r.sentMs + (r.e2elMs ?? 0));
  }
  return Math.max(0, (end - start) / 1000);
}
