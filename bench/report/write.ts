/**
 * Writes a result directory: results.json, summary.md and the plots (SVG + PNG) for a single run (with its
 * soak section when there is one) or a sweep. The simulator and the experiment call this too.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { metricValues } from '../metrics/aggregate.js';
import type { RequestRecord } from '../metrics/record.js';
import { writePlot } from '../plots/render.js';
import { inFlightSteps, thinTimeline } from '../metrics/timeline.js';
import { latencyCdfSpec, soakSpec, throughputSpec, timelineSpec, type ExecutorSample } from '../plots/specs.js';
import { writeJsonFile } from './json-file.js';
import type { RunResults, SoakResults, SweepResults } from './results.js';
import { summaryMarkdown } from './summary.js';

/** The in-flight timeline to plot, at most TIMELINE_POINTS points: the run's own (a simulator run that did not
 *  keep every record measures it while it runs) or the records'. */
const timelineOf = (r: RunResults) => thinTimeline((r.in_flight_timeline as Array<{ tS: number; inFlight: number }> | undefined) ?? inFlightSteps(r.requests));

const rateOf = (r: RunResults) => (r.request_rate === 'inf' ? NaN : (r.request_rate as number));

function cdfSeries(records: readonly RequestRecord[]) {
  return (['ttft', 'tpot', 'itl', 'e2el'] as const).map((m) => ({ name: m.toUpperCase(), values: metricValues(records, m) })).filter((s) => s.values.length > 0);
}

/** Writes everything; returns the file names written (relative to `dir`). */
export async function writeResultDir(dir: string, what: { run?: RunResults; sweep?: SweepResults; soak?: SoakResults }, o: { plots?: boolean } = {}): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const files: string[] = [];
  const plots: string[] = [];
  const plot = async (name: string, spec: Parameters<typeof writePlot>[2]) => {
    if (o.plots === false) return;
    plots.push(...(await writePlot(dir, name, spec)));
  };
  if (what.run) {
    const r = what.run;
    await plot('latency-cdf', latencyCdfSpec(cdfSeries(r.requests), `Latency CDFs: ${r.model_id} at ${r.request_rate} req/s`));
    if (Number.isFinite(rateOf(r))) {
      await plot('throughput', throughputSpec([{ rate: rateOf(r), requestThroughput: r.request_throughput as number, goodput: (r.request_goodput as number | null) ?? null }]));
    }
    await plot('timeline', timelineSpec(timelineOf(r), (r.executors_timeline as ExecutorSample[] | undefined) ?? []));
    if (what.soak) await plot('soak', soakSpec(what.soak.minutes));
    await writeJsonFile(join(dir, 'results.json'), r);
    files.push('results.json');
    const soakLine = what.soak ? `\n## Soak\n\n${what.soak.verdict.message}\n` : '';
    await writeFile(join(dir, 'summary.md'), summaryMarkdown(r, `cornserve bench: ${r.model_id}`, plots) + soakLine);
    files.push('summary.md');
  }
  if (what.sweep) {
    const runs = what.sweep.runs;
    await plot('latency-cdf', latencyCdfSpec(runs.map((r) => ({ name: `E2EL at ${r.request_rate} req/s`, values: metricValues(r.requests, 'e2el') })), 'E2EL CDF per request rate'));
    await plot('throughput', throughputSpec(runs.map((r) => ({ rate: rateOf(r), requestThroughput: r.request_throughput as number, goodput: (r.request_goodput as number | null) ?? null }))));
    const last = runs.at(-1);
    if (last) await plot('timeline', timelineSpec(timelineOf(last), (last.executors_timeline as ExecutorSample[] | undefined) ?? [], `In-flight requests and executors per task (at ${last.request_rate} req/s)`));
    await writeJsonFile(join(dir, 'results.json'), what.sweep);
    files.push('results.json');
    const md = [
      ...runs.map((r) => summaryMarkdown(r, `rate ${r.request_rate} req/s`, [])),
      `Highest rate with ≥ ${what.sweep.attainment_target * 100}% SLO attainment: ${what.sweep.highest_rate_at_target_attainment ?? '-'} req/s`,
      '',
      ...plots.filter((p) => p.endsWith('.svg')).map((p) => `![${p}](${p})`),
    ].join('\n');
    await writeFile(join(dir, 'summary.md'), md);
    files.push('summary.md');
  }
  return [...files, ...plots];
}
