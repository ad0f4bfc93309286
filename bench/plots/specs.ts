/**
 * Vega-lite specs for the bench plots (data in, spec out; pure): latency CDFs, throughput and goodput against
 * the offered rate, the timeline of in-flight requests and executors per task, and the soak's per-minute p99
 * and memory. The live client, the simulator and the experiment all draw through these, so their plots match.
 * vega-lite because a declarative spec renders headless to SVG with vega (no browser, no canvas) and resvg
 * turns that SVG into a PNG without native build steps.
 */
import type { TopLevelSpec } from 'vega-lite';

const WIDTH = 560;
const HEIGHT = 300;
/** Points per CDF line: enough for a smooth curve, small enough for a small SVG. */
const CDF_POINTS = 400;

export interface Series {
  name: string;
  values: readonly number[];
}

/** Sorted values → (value, cumulative fraction) points, thinned to at most `points`. */
export function cdfPoints(values: readonly number[], points = CDF_POINTS): Array<{ x: number; y: number }> {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return [];
  const step = Math.max(1, Math.floor(n / points));
  const out: Array<{ x: number; y: number }> = [];
  for (let i = 0; i < n; i += step) out.push({ x: sorted[i]!, y: (i + 1) / n });
  if (out.at(-1)!.y !== 1) out.push({ x: sorted[n - 1]!, y: 1 });
  return out;
}

const base = (title: string): Partial<TopLevelSpec> => ({
  $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
  title: { text: title, fontSize: 15, anchor: 'start' },
  width: WIDTH,
  height: HEIGHT,
  background: 'white',
  config: { font: 'sans-serif', legend: { labelLimit: 360 } },
});

/** One CDF line per series (log-scaled ms on x). */
export function latencyCdfSpec(series: readonly Series[], title = 'Latency CDFs'): TopLevelSpec {
  const values = series.flatMap((s) => cdfPoints(s.values).map((p) => ({ series: s.name, ms: Math.max(p.x, 0.01), fraction: p.y })));
  return {
    ...base(title),
    data: { values },
    mark: { type: 'line', interpolate: 'step-after' },
    encoding: {
      x: { field: 'ms', type: 'quantitative', scale: { type: 'log' }, title: 'latency (ms, log scale)' },
      y: { field: 'fraction', type: 'quantitative', title: 'fraction of requests', scale: { domain: [0, 1] } },
      color: { field: 'series', type: 'nominal', title: null, sort: series.map((s) => s.name) },
    },
  } as TopLevelSpec;
}

export interface RatePoint {
  /** Offered rate, req/s. */
  rate: number;
  requestThroughput: number;
  /** null when no SLO was given. */
  goodput: number | null;
}

/** Achieved request throughput and goodput against the offered rate (one point per run). */
export function throughputSpec(points: readonly RatePoint[], title = 'Throughput and goodput vs request rate'): TopLevelSpec {
  const values = points.flatMap((p) => [
    { rate: p.rate, series: 'request throughput', value: p.requestThroughput },
    ...(p.goodput === null ? [] : [{ rate: p.rate, series: 'goodput (requests meeting the SLOs)', value: p.goodput }]),
  ]);
  return {
    ...base(title),
    data: { values },
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'rate', type: 'quantitative', title: 'offered rate (req/s)' },
      y: { field: 'value', type: 'quantitative', title: 'req/s' },
      color: { field: 'series', type: 'nominal', title: null },
    },
  } as TopLevelSpec;
}

export interface ExecutorSample {
  /** Seconds since the start. */
  tS: number;
  /** Ready executors per task name. */
  executors: Record<string, number>;
}

/** In-flight requests (steps) and ready executors per task (polled) over time, so autoscaling shows. */
export function timelineSpec(inFlight: ReadonlyArray<{ tS: number; inFlight: number }>, executors: readonly ExecutorSample[], title = 'In-flight requests and executors per task'): TopLevelSpec {
  const values = [
    ...inFlight.map((s) => ({ t: s.tS, series: 'in-flight requests', line: 'requests', value: s.inFlight })),
    ...executors.flatMap((s) => Object.entries(s.executors).map(([task, n]) => ({ t: s.tS, series: `executors: ${task}`, line: 'executors', value: n }))),
  ];
  return {
    ...base(title),
    data: { values },
    mark: { type: 'line', interpolate: 'step-after' },
    encoding: {
      x: { field: 't', type: 'quantitative', title: 'time since the first request (s)' },
      y: { field: 'value', type: 'quantitative', title: 'count' },
      color: { field: 'series', type: 'nominal', title: null },
      // Requests solid, executor counts dashed (several tasks often sit on the same count).
      strokeDash: { field: 'line', type: 'nominal', legend: null, scale: { domain: ['requests', 'executors'], range: [[1, 0], [6, 3]] } },
    },
  } as TopLevelSpec;
}

export interface SoakPlotMinute {
  minute: number;
  p99E2elMs: number | null;
  rssBytes: Record<string, number>;
}

/** Processes drawn in the soak's memory chart (the largest at the end; the verdict covers every process). */
export const SOAK_PLOT_PROCESSES = 12;

/** The soak run: p99 E2EL per minute above, resident memory of the largest processes below. */
export function soakSpec(minutes: readonly SoakPlotMinute[], title = 'Soak: p99 latency and memory per minute'): TopLevelSpec {
  const p99 = minutes.filter((m) => m.p99E2elMs !== null).map((m) => ({ minute: m.minute, series: 'p99 E2EL', ms: m.p99E2elMs }));
  const last = minutes.at(-1)?.rssBytes ?? {};
  const shown = new Set(Object.keys(last).sort((a, b) => last[b]! - last[a]!).slice(0, SOAK_PLOT_PROCESSES));
  const rss = minutes.flatMap((m) => Object.entries(m.rssBytes).filter(([proc]) => shown.has(proc)).map(([proc, b]) => ({ minute: m.minute, series: proc, mib: b / 1024 / 1024 })));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, fontSize: 15, anchor: 'start' },
    background: 'white',
    config: { font: 'sans-serif', legend: { labelLimit: 640 } },
    resolve: { scale: { color: 'independent' } },
    vconcat: [
      {
        width: WIDTH, height: 160, data: { values: p99 }, mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'minute', type: 'quantitative', title: 'minute', axis: { tickMinStep: 1, format: 'd' } },
          y: { field: 'ms', type: 'quantitative', title: 'p99 E2EL (ms)' },
          color: { field: 'series', type: 'nominal', title: null },
        },
      },
      {
        width: WIDTH, height: 260, data: { values: rss }, mark: { type: 'line', point: true },
        encoding: {
          x: { field: 'minute', type: 'quantitative', title: 'minute', axis: { tickMinStep: 1, format: 'd' } },
          y: { field: 'mib', type: 'quantitative', title: `RSS (MiB), ${SOAK_PLOT_PROCESSES} largest processes` },
          color: { field: 'series', type: 'nominal', title: 'process' },
        },
      },
    ],
  } as TopLevelSpec;
}
