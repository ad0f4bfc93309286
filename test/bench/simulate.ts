/**
 * The simulator (`cornserve simulate`, sim/):
 *  - speed: the built-in 64 × 8 scenario for BENCH_SIM_SECONDS simulated seconds (default 600), per-token gaps
 *    off; figure = simulated requests per wall-clock second, baseline = the scenario's offered rate (what a
 *    real-time run would get through), ratio = how many times faster than real time;
 *  - validation (long version of test/integration/sim/validation.test.ts): the echo validation app under the same
 *    seeded workload through `cornserve bench` on a live local platform and through the simulator, median and
 *    p99 E2EL and throughput; figure = simulated, baseline = live, target within 10%;
 *  - validation with the real tiny models (long version of test/integration/sim/validation-tiny.test.ts): the mllm
 *    app live vs the simulator with the local-cpu preset fitted by `cornserve simulate fit`.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchCommand } from '../../control/cli/bench.js';
import type { RunResults } from '../../bench/report/results.js';
import { loadScenario, parseScenario } from '../../sim/scenario/schema.js';
import { simulate } from '../../sim/run.js';
import { compareRuns, measureOverheadMs, TINY_APP, TINY_WORKLOAD, VALIDATION_APP, VALIDATION_APP_FILE, validationScenario } from '../../sim/validate.js';
import { startAppPlatform } from '../helpers/app-platform.js';
import { tinyLiveVsSimulated } from '../helpers/sim-validation.js';
import { loadavg } from 'node:os';
import { startPlatform } from '../helpers/platform.js';
import type { BenchResult } from './types.js';

async function speed(): Promise<BenchResult> {
  const seconds = Number(process.env.BENCH_SIM_SECONDS ?? 600);
  const sc = await loadScenario('cluster-64x8', { durationS: seconds });
  const cpu0 = process.cpuUsage();
  const o = await simulate(sc, { itl: false });
  const cpu = process.cpuUsage(cpu0);
  const cpuS = (cpu.user + cpu.system) / 1e6;
  const perWallS = o.requests / (o.wallMs / 1000);
  return {
    name: `simulate 64×8, ${seconds} simulated s`,
    figure: perWallS,
    unit: 'req/s',
    baseline: sc.workload.rate,
    baselineName: 'real time (offered rate)',
    ratio: perWallS / sc.workload.rate,
    target: '1 simulated hour ≤ 5 min',
    notes: `${o.requests} requests, ${o.events} events in ${(o.wallMs / 1000).toFixed(1)} s wall (${cpuS.toFixed(1)} s CPU, so ${Math.round(o.requests / cpuS)} req per CPU-second on a machine shared with other jobs); one simulated hour ≈ ${((3600 * sc.workload.rate) / perWallS / 60).toFixed(1)} min at this speed; rss ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`,
  };
}

/** Bench rows of a live-vs-simulated comparison: figure = simulated, baseline = live, target within 10%. */
const comparisonRows = (live: RunResults, sim: RunResults, what: string, baselineName: string, note: string): BenchResult[] =>
  compareRuns(live, sim).map((c) => ({
    name: `simulate vs live${what}: ${c.metric}`,
    figure: c.simulated,
    unit: c.metric === 'request_throughput' ? 'req/s' : 'ms',
    baseline: c.live,
    baselineName,
    ratio: c.simulated / c.live,
    target: 'within 10%',
    notes: `${c.errorPct.toFixed(1)}% apart (${note})`,
  }));

async function validation(): Promise<BenchResult[]> {
  const run = { rate: 5, requests: Number(process.env.BENCH_SIM_REQUESTS ?? 200), seed: 21, devices: 2 };
  const dir = await mkdtemp(join(tmpdir(), 'cornserve-sim-bench-'));
  const p = await startPlatform({ devices: run.devices });
  try {
    await p.register(VALIDATION_APP_FILE);
    await writeFile(join(dir, 'requests.jsonl'), '{"text":"hello"}\n');
    const overheadMs = await measureOverheadMs(async () => void (await (await p.invoke(VALIDATION_APP, { text: 'hello' })).arrayBuffer()));
    await benchCommand({ out: () => {}, err: () => {} }, () => p.gatewayUrl).exitOverride().parseAsync(
      ['--api', 'invoke', '--app', VALIDATION_APP, '--dataset', join(dir, 'requests.jsonl'), '--request-rate', String(run.rate), '--num-requests', String(run.requests), '--seed', String(run.seed), '--result-dir', dir, '--no-plots'],
      { from: 'user' },
    );
    const live = JSON.parse(await readFile(join(dir, 'results.json'), 'utf8')) as RunResults;
    const sim = (await simulate(await parseScenario(validationScenario({ ...run, overheadMs })))).results;
    return comparisonRows(live, sim, '', 'live platform', `${run.requests} requests at ${run.rate} req/s, echo 200 ms × 2 at once; hop overhead measured now: ${overheadMs.toFixed(1)} ms`);
  } finally {
    await p.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The long version of test/integration/sim/validation-tiny.test.ts: the mllm app on the real tiny models. */
async function validationTiny(): Promise<BenchResult[]> {
  const run = { rate: 2, requests: Number(process.env.BENCH_SIM_TINY_REQUESTS ?? 120), seed: 23, devices: 4 };
  const dir = await mkdtemp(join(tmpdir(), 'cornserve-sim-bench-tiny-'));
  const ap = await startAppPlatform([TINY_APP], run.devices);
  try {
    const { live, sim, overheadMs, independent } = await tinyLiveVsSimulated(ap, run, dir);
    const before = new Map(compareRuns(live, independent.sim).map((c) => [c.metric, c]));
    return comparisonRows(live, sim, ', tiny models', 'live platform (mllm: tiny-vision + tiny-lm-a)',
      `${run.requests} requests at ${run.rate} req/s, ${TINY_WORKLOAD.mix}, ${TINY_WORKLOAD.inputLen}/${TINY_WORKLOAD.outputLen} tokens, ${TINY_WORKLOAD.imageSize} images; local-cpu preset fitted by cornserve simulate fit, executors and hops on the node's shared cores; hop overhead measured now: ${overheadMs.toFixed(1)} ms; load average ${loadavg()[0]!.toFixed(1)}`)
      .map((row) => {
        const b = before.get(row.name.slice(row.name.lastIndexOf(': ') + 2))!;
        return { ...row, notes: `${row.notes}; same run with independent devices (no shared cores): simulated ${b.simulated.toFixed(2)}, ${b.errorPct.toFixed(1)}% apart` };
      });
  } finally {
    await ap.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function run(): Promise<BenchResult[]> {
  return [await speed(), ...(await validation()), ...(await validationTiny())];
}
