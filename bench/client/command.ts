/**
 * `cornserve bench`: checks the options and the gateway, runs the load (one rate, a sweep of rates, or a soak),
 * shows progress, prints the summary table and writes the result directory.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GatewayClient } from '../../control/gateway/client.js';
import type { Io } from '../../lib/io.js';
import { CliError } from '../../lib/cli-errors.js';
import { soakMinutes, soakVerdict } from '../metrics/soak.js';
import { ATTAINMENT_TARGET, continueSweep, highestPassingRate } from '../metrics/sweep.js';
import { JsonlLog } from '../report/json-file.js';
import { runResults, type RunResults, type RunSettings, type SoakResults, type SweepResults } from '../report/results.js';
import { summaryText } from '../report/summary.js';
import { writeResultDir } from '../report/write.js';
import { arrivalTimesMs, patternText } from '../workload/arrivals.js';
import { nextSpec } from '../workload/mix.js';
import { RandomSource } from '../workload/random.js';
import type { RequestRecord } from '../metrics/record.js';
import { chatRequestFor, datasetRequest, parseDataset, type PreparedRequest } from '../workload/requests.js';
import { benchConfig, type BenchConfig, type RawBenchOptions } from './config.js';
import { startExecutorPoller, startRssSampler } from './observe.js';
import { hopelessRun } from './hopeless.js';
import { preflight } from './preflight.js';
import { pidListeningOn, processLabel } from './proc.js';
import { startProgress } from './progress.js';
import { startRun, type Run } from './runner.js';
import { chatTarget, invokeTarget, type Target } from './senders.js';

export interface BenchHooks {
  /** Called with each run as it starts (tests stop it; the CLI wires Ctrl-C). */
  onRun?: (run: Run) => void;
}

/** Reads and checks the dataset file (before any load). */
async function loadDataset(file: string, api: 'chat' | 'invoke'): Promise<Array<Record<string, unknown>>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new CliError(`--dataset: cannot read ${file}: ${(e as Error).message}`);
  }
  try {
    return parseDataset(text, api);
  } catch (e) {
    throw new CliError(`${(e as Error).message} (${file})`);
  }
}

/** The local platform's `cornserve up` process: the one listening on the gateway's port on this machine. */
function platformRoot(gatewayUrl: string): SoakResults['platform_root'] {
  const url = new URL(gatewayUrl);
  if (!['127.0.0.1', 'localhost', '[::1]', '0.0.0.0'].includes(url.hostname)) return { missing: `the gateway ${url.host} is not on this machine: memory is read from /proc for the local platform only` };
  const pid = pidListeningOn(Number(url.port || 80));
  if (pid === undefined) return { missing: `no process of ours listens on port ${url.port || 80} (is the platform a local \`cornserve up\`?)` };
  return { pid, label: processLabel(pid) };
}

export async function benchCommand(raw: RawBenchOptions, gatewayUrl: string, io: Io, hooks: BenchHooks = {}): Promise<{ resultDir: string; results: RunResults | SweepResults }> {
  const cfg = benchConfig(raw);
  const dataset = cfg.dataset ? await loadDataset(cfg.dataset, cfg.api) : undefined;
  const client = new GatewayClient(gatewayUrl);
  const taskIds = await preflight(client, cfg.api, cfg.target);
  const target: Target = cfg.api === 'chat' ? chatTarget(gatewayUrl) : invokeTarget(gatewayUrl, cfg.target, cfg.requestTimeoutMs);

  let current: Run | undefined;
  let interrupted = false;
  let interrupts = 0;
  const onSigint = () => {
    interrupted = true;
    interrupts++;
    io.err(interrupts === 1 ? `\nstopping: no new requests; waiting up to ${cfg.drainTimeoutMs / 1000} s for those in flight (Ctrl-C again cancels them)` : '\ncancelling the requests in flight');
    current?.stop();
  };
  process.on('SIGINT', onSigint);
  try {
    const settings = (rate: number): RunSettings => ({
      backend: 'cornserve',
      api: cfg.api,
      model_id: cfg.target,
      base_url: gatewayUrl,
      request_rate: rate === Infinity ? 'inf' : rate,
      burstiness: cfg.burstiness,
      max_concurrency: cfg.maxConcurrency ?? null,
      pattern: patternText(cfg.pattern),
      seed: cfg.seed,
      num_prompts: cfg.limit.count ?? null,
      duration_limit_s: cfg.limit.durationMs !== undefined ? cfg.limit.durationMs / 1000 : null,
      workload: dataset ? { dataset: cfg.dataset, lines: dataset.length } : { ...cfg.mix },
      slo: cfg.slo ?? null,
    });

    const runAt = async (rate: number, soak?: SoakResults['platform_root']): Promise<{ results: RunResults; soak?: SoakResults }> => {
      const rng = new RandomSource(cfg.seed);
      const mixRng = rng.fork('mix');
      const request = (i: number): PreparedRequest =>
        dataset ? datasetRequest(dataset, i, cfg.target, cfg.api) : chatRequestFor(nextSpec(i, cfg.mix, mixRng), cfg.target);
      io.err(`bench: ${cfg.api} → ${cfg.target} at ${rate === Infinity ? 'inf' : rate} req/s (${patternText(cfg.pattern)}, burstiness ${cfg.burstiness}${cfg.maxConcurrency ? `, max concurrency ${cfg.maxConcurrency}` : ''}), ${cfg.limit.count !== undefined ? `${cfg.limit.count} requests` : ''}${cfg.limit.count !== undefined && cfg.limit.durationMs !== undefined ? ' or ' : ''}${cfg.limit.durationMs !== undefined ? `${cfg.limit.durationMs / 1000} s` : ''}`);
      // Each request's record goes to disk as it ends: a run that dies keeps what it measured.
      await mkdir(cfg.resultDir, { recursive: true });
      const log = new JsonlLog(join(cfg.resultDir, cfg.sweepRates ? `requests-${rate}.jsonl` : 'requests.jsonl'));
      const progress = startProgress(cfg.limit, io);
      const completed: RequestRecord[] = [];
      let hopeless: ReturnType<typeof hopelessRun>;
      const run: Run = startRun({
        target,
        arrivals: arrivalTimesMs({ rate, burstiness: cfg.burstiness, pattern: cfg.pattern }, rng.fork('arrivals')),
        request,
        limit: cfg.limit,
        ...(cfg.maxConcurrency ? { maxConcurrency: cfg.maxConcurrency } : {}),
        requestTimeoutMs: cfg.requestTimeoutMs,
        drainTimeoutMs: cfg.drainTimeoutMs,
        onSent: () => progress.sent(),
        onDone: (r) => {
          progress.done(r.ok);
          log.add(r);
          completed.push(r);
          if (hopeless) return;
          hopeless = hopelessRun(completed);
          if (!hopeless) return;
          run.stop(); // no more sending …
          run.stop(); // … and the requests in flight are cancelled: they would fail alike
        },
      });
      current = run;
      hooks.onRun?.(run);
      const executors = startExecutorPoller(client, taskIds);
      const rss = soak && 'pid' in soak ? startRssSampler(soak.pid, cfg.soakSampleMs) : undefined;
      const out = await run.done.finally(() => log.close());
      progress.stop();
      if (hopeless) {
        await executors.stop();
        await rss?.stop();
        const fix = cfg.api === 'invoke' && !dataset
          ? ` --api invoke sends chat-shaped request data; give the app's own request data with --dataset FILE.jsonl (one request_data object per line).`
          : ' Fix the request data (--dataset) or the target, then run again.';
        throw new CliError(`bench stopped: the first ${hopeless.count} requests all failed with HTTP ${hopeless.status} ${hopeless.code}: ${hopeless.message.replace(/\.$/, '')}.${fix}`);
      }
      const results: RunResults = { ...runResults(settings(rate), out.records, { startedAt: out.startedAt, interrupted: out.interrupted, executors: await executors.stop() }), requests_jsonl: log.close() };
      if (!soak) return { results };
      const minutes = soakMinutes(out.records, rss ? await rss.stop() : [], results.duration as number);
      return { results, soak: { minutes, verdict: soakVerdict(minutes), platform_root: soak } };
    };

    if (cfg.sweepRates) {
      const runs: RunResults[] = [];
      for (const rate of cfg.sweepRates) {
        const { results } = await runAt(rate);
        runs.push(results);
        io.err(`  rate ${rate}: ${(results.request_throughput as number).toFixed(2)} req/s achieved${cfg.slo ? `, attainment ${((results.slo_attainment as number) * 100).toFixed(1)}%` : ''}`);
        const points = runs.map((r) => ({ rate: r.request_rate as number, attainment: cfg.slo ? (r.slo_attainment as number) : null }));
        if (interrupted) break;
        if (!continueSweep(points)) {
          io.err(`  attainment fell below ${ATTAINMENT_TARGET * 100}%: the sweep stops here`);
          break;
        }
      }
      const points = runs.map((r) => ({ rate: r.request_rate as number, attainment: cfg.slo ? (r.slo_attainment as number) : null }));
      const sweep: SweepResults = { runs, highest_rate_at_target_attainment: cfg.slo ? highestPassingRate(points) : null, attainment_target: ATTAINMENT_TARGET, interrupted };
      for (const r of runs) io.out(`\n--- request rate ${r.request_rate} req/s ---\n${summaryText(r)}`);
      if (cfg.slo) io.out(`\nHighest rate with ≥ ${ATTAINMENT_TARGET * 100}% SLO attainment: ${sweep.highest_rate_at_target_attainment ?? 'none of the rates run'} req/s`);
      const files = await writeResultDir(cfg.resultDir, { sweep }, { plots: cfg.plots });
      io.out(`\nresults: ${cfg.resultDir}/ (${files.join(', ')})`);
      return { resultDir: cfg.resultDir, results: sweep };
    }

    const root = cfg.soakMinutes !== undefined ? platformRoot(gatewayUrl) : undefined;
    if (root && 'missing' in root) io.err(`soak: memory will not be sampled: ${root.missing}`);
    if (root && 'pid' in root) io.err(`soak: sampling the memory of ${root.label} and its child processes every ${cfg.soakSampleMs / 1000} s`);
    const { results, soak } = await runAt(cfg.rate, root);
    const all = soak ? { ...results, soak } : results;
    io.out(summaryText(results));
    if (soak) io.out(`\nSoak: ${soak.verdict.message}`);
    const files = await writeResultDir(cfg.resultDir, { run: all, ...(soak ? { soak } : {}) }, { plots: cfg.plots });
    io.out(`\nresults: ${cfg.resultDir}/ (${files.join(', ')})`);
    return { resultDir: cfg.resultDir, results: all };
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export type { BenchConfig };
