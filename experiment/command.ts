/**
 * `cornserve experiment disaggregation`: runs the disaggregation experiment in the simulator, prints the table,
 * writes results.json (per scenario and system: goodput_rps, p99_ttft_ms, p99_e2el_ms, ratios vs monolithic),
 * summary.md and the plots (the bench client's latency CDF and throughput specs).
 */
import { Command } from 'commander';
import type { Io } from '../lib/io.js';
import { CliError } from '../lib/cli-errors.js';
import { eachScenario } from './each-scenario.js';

const EXAMPLES = `
Examples:
  cornserve experiment disaggregation --quick                  # 3 scenarios, Poisson, 30 simulated s each (CI)
  cornserve experiment disaggregation --result-dir experiment-results/disaggregation

Systems at an equal device count (8 × a100-80g preset): monolithic (every replica holds every component,
encoders inside), disaggregated (the best fully split plan), autoscaler (the live autoscaler in virtual time,
starting from that split, each task's capacity from its simulated profile), planner (cornserve plan's free choice), and two
hand-written splits (even, proportional to each stage's work). See docs/experiment.md.
`;

/** A scenario's results without the fixed-rate runs' per-request lists (they feed the plots only). */
const withoutFixedRuns = <R extends { systems: Record<string, { fixed?: unknown }> }>(r: R) =>
  ({ ...r, systems: Object.fromEntries(Object.entries(r.systems).map(([n, x]) => { const { fixed: _fixed, ...rest } = x; return [n, rest]; })) });
const f = (v: number | null | undefined, d = 2) => (v === null || v === undefined ? '—' : v === Infinity ? '∞' : v.toFixed(d));

export function experimentCommand(io: Io): Command {
  const cmd = new Command('experiment').description('reproducible experiments run in the simulator');
  cmd.command('disaggregation')
    .description('monolithic vs disaggregated vs planned deployments at an equal device count: goodput, p99 TTFT/E2EL, ratios')
    .option('--quick', 'the short version (3 scenarios, Poisson arrivals, 30 simulated s)')
    .option('--result-dir <dir>', 'where results.json, summary.md and the plots go', 'experiment-results/disaggregation')
    .option('--no-plots', 'skip the SVG/PNG plots')
    .addHelpText('after', EXAMPLES)
    .action(async (o: { quick?: boolean; resultDir: string; plots: boolean }) => {
      const [{ scenarios, runScenario }, { mkdir, writeFile }, { writePlot }, { latencyCdfSpec, throughputSpec }, { writeJsonFile }] = await Promise.all([
        import('./disaggregation.js'), import('node:fs/promises'), import('../bench/plots/render.js'), import('../bench/plots/specs.js'), import('../bench/report/json-file.js'),
      ]);
      await mkdir(o.resultDir, { recursive: true });
      const results = await eachScenario(scenarios(Boolean(o.quick)), async (s) => {
        io.err(`experiment: ${s.name} (${s.about})`);
        try {
          return await runScenario(s, io.err);
        } catch (e) {
          if (e instanceof Error && ['ScenarioError', 'ModelOutputError', 'PlanError', 'InfeasiblePlanError'].includes(e.name)) throw new CliError(`${s.name}: ${e.message}`);
          throw e;
        }
      }, (done) => writeJsonFile(`${o.resultDir}/results.json`, { experiment: 'disaggregation', quick: Boolean(o.quick), partial: true, scenarios: done.map(withoutFixedRuns) }), io.err);
      const rows = results.flatMap((r) => Object.entries(r.systems).map(([name, x]) =>
        `| ${r.scenario} | ${name} | ${Object.entries(x.replicas).filter(([, n]) => n > 0).map(([l, n]) => `${n}×${l.replace('cornserve/', '')}`).join(' ')} | ${f(x.goodput_rps)} | ${f(x.p99_ttft_ms, 0)} | ${f(x.p99_e2el_ms, 0)} | ${f(x.goodput_ratio_vs_monolithic)} | ${f(x.p99_e2el_ratio_vs_monolithic)} |`));
      const ends = results.flatMap((r) => (r.systems.autoscaler?.replicas_at_end_of_fixed_run ? [`${r.scenario}: the autoscaler made ${r.systems.autoscaler.scale_events_at_fixed_rate} change(s) at ${r.fixed_rate_rps.toFixed(2)} req/s and ended at ${Object.entries(r.systems.autoscaler.replicas_at_end_of_fixed_run).filter(([, n]) => n > 0).map(([l, n]) => `${n}×${l.replace('cornserve/', '')}`).join(' ')}`] : []));
      const table = ['| scenario | system | executors | goodput (req/s) | p99 TTFT (ms) | p99 E2EL (ms) | goodput ÷ monolithic | monolithic p99 E2EL ÷ system |', '|---|---|---|---|---|---|---|---|', ...rows].join('\n');
      io.out(table);
      for (const line of ends) io.out(line);
      const plots: string[] = [];
      if (o.plots) {
        for (const r of results) {
          const name = r.scenario.replace(/[^a-z0-9-]+/gi, '-');
          plots.push(...await writePlot(o.resultDir, `${name}-e2el-cdf`, latencyCdfSpec(Object.entries(r.systems).map(([n, x]) => ({ name: n, values: ((x.fixed?.requests ?? []) as Array<{ e2elMs?: number }>).map((q) => q.e2elMs ?? NaN).filter(Number.isFinite) })), `${r.scenario}: E2EL at ${r.fixed_rate_rps.toFixed(2)} req/s`)));
          for (const sys of ['monolithic', 'disaggregated']) {
            const pts = r.systems[sys]?.points ?? [];
            if (pts.length) plots.push(...await writePlot(o.resultDir, `${name}-${sys}-throughput`, throughputSpec([...pts].sort((a, b) => a.rate - b.rate).map((p) => ({ rate: p.rate, requestThroughput: p.throughput, goodput: p.goodput })), `${r.scenario} (${sys}): throughput and goodput vs rate`)));
          }
        }
      }
      const json = {
        experiment: 'disaggregation',
        quick: Boolean(o.quick),
        conditions: 'simulated (cornserve simulate); device preset a100-80g from sim/presets/gpus.yaml (LLM: DistServe OPT-13B TP1 coefficients; encoder derived from Vidur per-operator A100 rates for the Qwen2.5-VL-7B vision tower, cornserve simulate fit-encoder; generator row nominal); 8 devices on 1 node; goodput = highest rate with ≥ 90% SLO attainment',
        partial: false,
        scenarios: results.map(withoutFixedRuns),
      };
      await writeJsonFile(`${o.resultDir}/results.json`, json);
      await writeFile(`${o.resultDir}/summary.md`, `# Disaggregation experiment${o.quick ? ' (quick)' : ''}\n\n${json.conditions}\n\n${table}\n\n${ends.map((l) => `- ${l}`).join('\n')}\n\n${plots.filter((p) => p.endsWith('.png')).map((p) => `![${p}](${p})`).join('\n')}\n`);
      io.out(`\nresults: ${o.resultDir}/ (results.json, summary.md${plots.length ? `, ${plots.length} plot files` : ''})`);
    });
  cmd.command('reference')
    .description("the reference system's own benchmark workloads (InternVL3-38B, Qwen2.5-VL-32B) with device memory on: monolithic vs encoder + LLM, equal devices and encoder devices not charged")
    .option('--quick', '30 simulated s per run instead of 120')
    .option('--only <name>', 'one workload by name')
    .option('--result-dir <dir>', 'where results.json and summary.md go', 'experiment-results/reference')
    .addHelpText('after', `
Workloads: ${'internvl3-38b/a40, internvl3-38b/a100 (run_compare), defaults/12xa40 (the benchmark defaults), qwen2.5-vl-32b-tput (test_32b_tput)'}.
Model sizes from sim/memory/models.yaml, device memory and latency rows from sim/presets/gpus.yaml. See docs/experiment.md.`)
    .action(async (o: { quick?: boolean; only?: string; resultDir: string }) => {
      const [{ REFERENCE_WORKLOADS, runReference, referenceTable }, { mkdir, writeFile }, { writeJsonFile }] = await Promise.all([
        import('./reference.js'), import('node:fs/promises'), import('../bench/report/json-file.js'),
      ]);
      const chosen = REFERENCE_WORKLOADS.filter((w) => o.only === undefined || w.name === o.only);
      if (!chosen.length) throw new CliError(`--only: unknown workload '${o.only}' (known: ${REFERENCE_WORKLOADS.map((w) => w.name).join(', ')})`);
      await mkdir(o.resultDir, { recursive: true });
      const results = await eachScenario(chosen, async (w) => {
        io.err(`experiment: ${w.name} (${w.source}; ${w.model} on ${w.devices} × ${w.device})`);
        try {
          return await runReference(w, Boolean(o.quick), io.err);
        } catch (e) {
          if (e instanceof Error && ['ScenarioError', 'ModelOutputError', 'PlanError'].includes(e.name)) throw new CliError(`${w.name}: ${e.message}`);
          throw e;
        }
      }, (done) => writeJsonFile(`${o.resultDir}/results.json`, { experiment: 'reference', quick: Boolean(o.quick), partial: true, workloads: done }), io.err);
      const table = referenceTable(results);
      io.out(table);
      await writeJsonFile(`${o.resultDir}/results.json`, { experiment: 'reference', quick: Boolean(o.quick), partial: false, workloads: results });
      await writeFile(`${o.resultDir}/summary.md`, `# The reference's workloads, memory on${o.quick ? ' (quick)' : ''}\n\n${table}\n`);
      io.out(`\nresults: ${o.resultDir}/ (results.json, summary.md)`);
    });
  cmd.command('live-crosscheck')
    .description('one small configuration on the live local platform (tiny models, 4 devices): monolithic vs disaggregated at a few rates, and the simulator (preset local-cpu) on the same scenario; prints live vs simulated')
    .option('--rates <list>', 'request rates (req/s)', '2,4,8')
    .option('--num-requests <n>', 'requests per rate and system', '40')
    .option('--port <port>', 'gateway port of the platform it starts (default: a free one)')
    .option('--sim-only', 'the simulator only (no live platform)')
    .option('--result-dir <dir>', 'where results.json, summary.md and the bench result directories go', 'experiment-results/live-crosscheck')
    .addHelpText('after', `
Monolithic: experiment/apps/mllm-image-monolithic.ts (encoderFission: false), 4 LLM executors with the vision
encoder inside. Disaggregated: experiment/apps/mllm-image.ts, 1 Eric + 3 LLM executors. Same seeded workload
(mix text:0.3,image:0.7, 224x224 images, 64 input / 16 output tokens, Poisson), SLO ttft_ms=1000,e2el_ms=3000.
Each system runs in its own \`cornserve up --devices 4 --no-autoscale\`, started and stopped by the command.`)
    .action(async (o: { rates: string; numRequests: string; port?: string; simOnly?: boolean; resultDir: string }) => {
      const [{ DEFAULT_CROSSCHECK, liveCrosscheck, crosscheckTable, p99Agreement, agreementText }, { mkdir, writeFile }, { loadavg }, { writeJsonFile }] = await Promise.all([
        import('./live-crosscheck.js'), import('node:fs/promises'), import('node:os'), import('../bench/report/json-file.js'),
      ]);
      const rates = o.rates.split(',').map(Number);
      if (!rates.length || rates.some((r) => !(r > 0))) throw new CliError(`--rates: positive numbers separated by commas, got ${o.rates}`);
      const numRequests = Number(o.numRequests);
      if (!Number.isInteger(numRequests) || numRequests < 1) throw new CliError(`--num-requests: a positive integer, got ${o.numRequests}`);
      const port = o.port === undefined ? undefined : Number(o.port);
      if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) throw new CliError(`--port: a TCP port, got ${o.port}`);
      await mkdir(o.resultDir, { recursive: true });
      const load0 = loadavg()[0]!;
      const r = await liveCrosscheck({ ...DEFAULT_CROSSCHECK, rates, numRequests, resultDir: o.resultDir, simOnly: Boolean(o.simOnly), ...(port ? { port } : {}) }, io);
      const load = `load average (1 min) ${load0.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end, ${(await import('node:os')).cpus().length} cores`;
      const table = `${crosscheckTable(r)}\n\n${agreementText(p99Agreement(r))}`;
      io.out(table);
      io.out(load);
      await writeJsonFile(`${o.resultDir}/results.json`, { ...r, p99_agreement: p99Agreement(r), load });
      await writeFile(`${o.resultDir}/summary.md`, `# Live cross-check: monolithic vs disaggregated\n\n${load}\n\n${table}\n`);
      io.out(`\nresults: ${o.resultDir}/ (results.json, summary.md)`);
    });
  return cmd;
}
