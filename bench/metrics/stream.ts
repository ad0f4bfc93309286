/**
 * The same aggregates as aggregate() (same keys), folded one record at a time so a long run need not keep its
 * records: percentiles from the same HDR histograms (so identical), means and standard deviations from running
 * sums (exact up to floating-point order). Pure.
 */
import type { Histogram } from 'hdr-histogram-js';
import { LATENCY_METRICS, latencyHistogram, PERCENTILES, type Aggregates, type LatencyMetric } from './aggregate.js';
import { tpotMs, type RequestRecord } from './record.js';
import { meetsSlo, type Slo } from './slo.js';

interface Moments { h: Histogram; n: number; sum: number; sumSq: number }

export class StreamingAggregate {
  private total = 0;
  private ok = 0;
  private good = 0;
  private totalIn = 0;
  private totalOut = 0;
  private start = Infinity;
  private end = -Infinity;
  private readonly errorsByCode: Record<string, number> = {};
  private readonly metrics = new Map<LatencyMetric, Moments>(LATENCY_METRICS.map((m) => [m, { h: latencyHistogram(), n: 0, sum: 0, sumSq: 0 }]));

  constructor(private readonly slo?: Slo) {}

  add(r: RequestRecord): void {
    this.total++;
    this.start = Math.min(this.start, r.sentMs);
    this.end = Math.max(this.end, r.sentMs + (r.e2elMs ?? 0));
    if (this.slo && meetsSlo(r, this.slo)) this.good++;
    if (!r.ok) {
      const code = r.errorCode ?? `HTTP_${r.status}`;
      this.errorsByCode[code] = (this.errorsByCode[code] ?? 0) + 1;
      return;
    }
    this.ok++;
    this.totalIn += r.inputTokens;
    this.totalOut += r.outputTokens;
    if (r.ttftMs !== undefined) this.value('ttft', r.ttftMs);
    if (r.e2elMs !== undefined) this.value('e2el', r.e2elMs);
    const t = tpotMs(r);
    if (t !== undefined) this.value('tpot', t);
    for (const v of r.itlMs) this.value('itl', v);
  }

  /** First send → last completion, in seconds (runDurationS over every record added). */
  durationS(): number {
    return this.total ? Math.max(0, (this.end - this.start) / 1000) : 0;
  }

  aggregates(percentiles: readonly number[] = PERCENTILES): Aggregates {
    const durationS = this.durationS();
    const perS = (n: number) => (durationS > 0 ? n / durationS : 0);
    const out: Aggregates = {
      duration: durationS,
      completed: this.ok,
      failed: this.total - this.ok,
      total_input_tokens: this.totalIn,
      total_output_tokens: this.totalOut,
      request_throughput: perS(this.ok),
      output_throughput: perS(this.totalOut),
      total_token_throughput: perS(this.totalIn + this.totalOut),
      errors_by_code: { ...this.errorsByCode },
    };
    if (this.slo) {
      out.request_goodput = perS(this.good);
      out.slo_attainment = this.total ? this.good / this.total : null;
    } else {
      out.request_goodput = null;
    }
    for (const [m, s] of this.metrics) {
      const empty = s.n === 0;
      const mean = s.sum / s.n;
      out[`mean_${m}_ms`] = empty ? null : mean;
      out[`median_${m}_ms`] = empty ? null : s.h.getValueAtPercentile(50) / 1000;
      out[`std_${m}_ms`] = empty ? null : Math.sqrt(Math.max(0, s.sumSq / s.n - mean * mean));
      for (const q of percentiles) out[`p${q}_${m}_ms`] = empty ? null : s.h.getValueAtPercentile(q) / 1000;
    }
    return out;
  }

  private value(m: LatencyMetric, v: number): void {
    const s = this.metrics.get(m)!;
    s.h.recordValue(Math.max(1, Math.round(v * 1000)));
    s.n++;
    s.sum += v;
    s.sumSq += v * v;
  }
}
