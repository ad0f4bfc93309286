/**
 * The human summary of a run: the terminal table (vLLM's "Serving Benchmark Result" layout) and summary.md.
 * Pure: results object in, text out.
 */
import { table } from '../../lib/table.js';
import { LATENCY_METRICS } from '../metrics/aggregate.js';
import type { RunResults } from './results.js';

const num = (v: unknown, digits = 2) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(digits) : '-');
const NAMES: Record<string, string> = { ttft: 'TTFT', tpot: 'TPOT', itl: 'ITL', e2el: 'E2EL' };

/** Headline lines: counts, duration, throughputs, goodput and errors by code. */
export function headline(r: RunResults): Array<[string, string]> {
  const errors = r.errors_by_code as Record<string, number>;
  const rows: Array<[string, string]> = [
    ['Successful requests', String(r.completed)],
    ['Failed requests', `${r.failed}${Object.keys(errors).length ? ` (${Object.entries(errors).map(([c, n]) => `${c}: ${n}`).join(', ')})` : ''}`],
    ['Offered rate (req/s)', `${r.request_rate === 'inf' ? 'inf' : num(r.request_rate)}${r.pattern !== 'constant' ? ` (${r.pattern as string})` : ''}, burstiness ${num(r.burstiness, 2)}`],
    ['Benchmark duration (s)', num(r.duration)],
    ['Request throughput (req/s)', num(r.request_throughput)],
    ['Output token throughput (tok/s)', num(r.output_throughput)],
    ['Total token throughput (tok/s)', num(r.total_token_throughput)],
  ];
  if (r.slo) {
    rows.push(['Request goodput (req/s)', num(r.request_goodput)]);
    rows.push(['SLO attainment', typeof r.slo_attainment === 'number' ? `${(r.slo_attainment * 100).toFixed(1)}%` : '-']);
  }
  if (r.interrupted) rows.push(['Interrupted', 'yes (partial results)']);
  return rows;
}

/** Metric rows: mean, median, p90, p95, p99 of TTFT, TPOT, ITL, E2EL (ms). */
export function latencyRows(r: RunResults): string[][] {
  return LATENCY_METRICS.map((m) => [NAMES[m]!, ...['mean', 'median', 'p90', 'p95', 'p99'].map((s) => num(r[`${s}_${m}_ms`]))]);
}

const LATENCY_HEADER = ['metric (ms)', 'mean', 'median', 'p90', 'p95', 'p99'];

export function summaryText(r: RunResults): string {
  const head = headline(r);
  const w = Math.max(...head.map(([k]) => k.length)) + 2;
  return [
    '============ Serving Benchmark Result ============',
    ...head.map(([k, v]) => `${`${k}:`.padEnd(w)}${v}`),
    '',
    table(LATENCY_HEADER, latencyRows(r)),
  ].join('\n');
}

const mdTable = (header: string[], rows: string[][]) =>
  [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');

export function summaryMarkdown(r: RunResults, title: string, plots: string[]): string {
  return [
    `# ${title}`,
    '',
    `${r.date} · \`${r.api}\` against \`${r.model_id}\` at ${r.base_url} · seed ${r.seed}`,
    '',
    mdTable(['', ''], headline(r)),
    '',
    mdTable(LATENCY_HEADER, latencyRows(r)),
    '',
    ...plots.filter((p) => p.endsWith('.svg')).map((p) => `![${p}](${p})`),
    '',
  ].join('\n');
}
