/**
 * `cornserve simulate`: a scenario (file or built-in name) run in virtual time by our own policy code; prints
 * the bench client's summary table and writes the same result directory as `cornserve bench`.
 * The work is loaded only when the command runs.
 */
import { Command } from 'commander';
import type { Io } from '../lib/io.js';
import { CliError } from '../lib/cli-errors.js';

const EXAMPLES = `
Examples:
  cornserve simulate --scenario local-1x4                       # make run's shape, 60 simulated seconds
  cornserve simulate --scenario cluster-64x8 --duration 3600 --no-itl --result-dir sim-results/64x8
  cornserve simulate my-scenario.yaml --seed 7 --request-rate 50
  cornserve simulate fit                                        # fit the local-cpu preset from our tiny models here

A scenario names the cluster (nodes × devices, device preset from sim/presets/*.yaml, links), the app (a
real app file, recorded to task graphs through the SDK), the deployment (executors per task, monolithic, the
autoscaler, or a plan file as cornserve plan writes it: deployment: {mode: plan, file: plan.yaml}), the
workload (the bench client's options) and the SLOs. See docs/simulate.md.
`;

const positive = (name: string, v: string | undefined, integer = false) => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || (integer && !Number.isInteger(n))) throw new CliError(`${name} must be a ${integer ? 'non-negative integer' : 'non-negative number'}, got '${v}'`);
  return n;
};

const FIT_EXAMPLES = `
Examples:
  cornserve simulate fit                         # measure here, write sim/presets/local-cpu.yaml (device: local-cpu)
  cornserve simulate fit --device my-laptop --out /tmp/my-laptop.yaml --quick
  cornserve simulate fit --host-only             # only the host block (after platform changes), the models kept

Measures Eric (tiny-vision), the LLM executor (tiny-lm-a) and Geri (tiny-image-gen) model steps on this machine
(the engines' own calls, one process, ~1-3 min), fits the simulator's latency models (sim/latency/fit.ts),
measures the live platform's own cost per request and per invocation (serial echo requests through an in-process
\`cornserve up\`; the preset's host block, with this machine's core count: the simulator runs every executor and
hop of a node on those shared cores) and
writes a presets file naming the machine, the date and the samples. Scenarios then say "device: NAME".
A presets file must be in sim/presets/ to be found by name.
`;

/** `cornserve simulate fit --host-only`: a new host block in an existing presets file (its models kept). */
async function fitHostOnly(io: Io, device: string, out?: string): Promise<void> {
  const [{ measureHost, presetWithHost }, { machineText }, { readFile, writeFile }, { join }, { loadavg }, { PRESETS_DIR }] = await Promise.all([
    import('./fit/host.js'), import('./fit/measure.js'), import('node:fs/promises'), import('node:path'), import('node:os'), import('./scenario/schema.js'),
  ]);
  const file = out ?? join(PRESETS_DIR, `${device}.yaml`);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new CliError(`--host-only adds to an existing presets file: cannot read ${file} (${(e as Error).message}); run cornserve simulate fit first`);
  }
  io.err('simulate fit: measuring the live platform\'s hops on this machine (host block only)');
  const measured = await measureHost(21, (line) => io.err(line));
  let next: string;
  try {
    next = presetWithHost(text, device, measured, { machine: machineText(), loadAverage: loadavg()[0]! });
  } catch (e) {
    throw new CliError(`${file}: ${(e as Error).message}`);
  }
  await writeFile(file, next);
  const h = measured.host;
  io.out(`host: ${h.cores} shared cores; per request ${h.requestMs.toFixed(2)} ms, per invocation ${h.invocationMs.toFixed(2)} ms (live echo hops)`);
  io.out(`host block of '${device}' written to ${file} (its models kept)`);
}

/** `cornserve simulate fit`: latency presets fitted from our tiny models on this machine. */
function fitCommand(io: Io): Command {
  return new Command('fit')
    .description('measure our executors\' model steps with the tiny models on this machine and write a fitted latency preset')
    .option('--device <name>', 'the preset name scenarios will use (cluster.device)', 'local-cpu')
    .option('--out <file>', 'where the presets file goes (default sim/presets/<device>.yaml)')
    .option('--quick', 'a few points per model (seconds; for trying the command, not for a preset you keep)')
    .option('--host-only', 'measure only the host block (shared cores, the live platform\'s per-request and per-invocation cost) into the existing presets file, keeping its fitted models')
    .addHelpText('after', FIT_EXAMPLES)
    .action(async (opts: { device: string; out?: string; quick?: boolean; hostOnly?: boolean }) => {
      if (!/^[a-z0-9][a-z0-9-]*$/.test(opts.device)) throw new CliError(`--device must be a lowercase name (letters, digits, -), got '${opts.device}'`);
      if (opts.hostOnly) return fitHostOnly(io, opts.device, opts.out);
      const [{ measureAndFit, presetYaml, FULL_PLAN, QUICK_PLAN }, { writeFile }, { join }, { PRESETS_DIR }] = await Promise.all([
        import('./fit/measure.js'), import('node:fs/promises'), import('node:path'), import('./scenario/schema.js'),
      ]);
      io.err(`simulate fit: measuring the tiny models' steps on this machine (${opts.quick ? 'quick' : 'full'} plan)`);
      let o;
      try {
        o = await measureAndFit(opts.quick ? QUICK_PLAN : FULL_PLAN, (line) => io.err(line));
      } catch (e) {
        if (e instanceof Error && e.name === 'ModelOutputError') throw new CliError(e.message);
        throw e;
      }
      const file = opts.out ?? join(PRESETS_DIR, `${opts.device}.yaml`);
      await writeFile(file, presetYaml(opts.device, o));
      const m = o.models;
      io.out(`encoder ms = ${m.encoder!.a.toFixed(3)} + ${m.encoder!.b.toFixed(5)}·patches`);
      io.out(`LLM prefill ms = ${m.llm!.prefill.a.toFixed(3)} + ${m.llm!.prefill.b.toFixed(5)}·Σtokens + ${m.llm!.prefill.c.toExponential(3)}·Σtokens²`);
      io.out(`LLM decode step ms = ${m.llm!.decode.a.toFixed(3)} + ${m.llm!.decode.b.toExponential(3)}·Σcontext + ${m.llm!.decode.c.toFixed(4)}·batch`);
      io.out(`generator step ms = ${m.generator!.perStep.a.toFixed(3)} + ${m.generator!.perStep.b.toFixed(4)}·batch (× ${m.generator!.steps} steps)`);
      io.out(`host: ${o.host.cores} shared cores; per request ${o.host.requestMs.toFixed(2)} ms, per invocation ${o.host.invocationMs.toFixed(2)} ms (live echo hops)`);
      io.out(`preset '${opts.device}' written to ${file} (measured in ${o.seconds.toFixed(0)} s)`);
    });
}

/** `cornserve simulate fit-encoder`: the presets' encoder rows derived from published GPU profiles (sim/fit/vision-tower.ts). */
function fitEncoderCommand(io: Io): Command {
  return new Command('fit-encoder')
    .description('derive the GPU presets\' encoder rows (a + b·patches + c·patches²) for a named vision tower from Vidur\'s per-operator profiles')
    .requiredOption('--profiles <dir>', 'the GPU profiles folder: Vidur\'s profiling tables under vidur/ (microsoft/vidur data/profiling)')
    .addHelpText('after', '\nPrints the derivation (fitted GEMM, element-wise and attention rates per device) and one encoder row per\npreset, as sim/presets/gpus.yaml cites them. Reads the tables where they are; copies nothing.\n')
    .action(async (opts: { profiles: string }) => {
      const { fitEncoderPresets, encoderReport } = await import('./fit/vision-tower.js');
      let fits;
      try {
        fits = await fitEncoderPresets(opts.profiles);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new CliError(`--profiles: ${(e as Error).message} (the folder must hold vidur/compute/{a100,h100,a40}/… and vidur/legacy/e2d00e9/a100/attention.csv.gz)`);
        throw e;
      }
      io.out(encoderReport(fits));
    });
}

export function simulateCommand(io: Io): Command {
  return new Command('simulate')
    .addCommand(fitCommand(io))
    .addCommand(fitEncoderCommand(io))
    .description('run a scenario on a simulated cluster in virtual time (our own allocation, routing and batching code) and report bench metrics')
    .argument('[scenario]', 'a scenario YAML file')
    .option('--scenario <name>', 'a built-in scenario: local-1x4 | cluster-64x8')
    .option('--duration <s>', 'simulated seconds of arrivals (overrides the scenario)')
    .option('--request-rate <r>', 'requests per second (overrides the scenario)')
    .option('--seed <n>', 'random seed (overrides the scenario)')
    .option('--result-dir <dir>', 'where results.json, requests.jsonl (every request, as it ends), summary.md and plots go', undefined)
    .option('--no-itl', 'do not keep per-token gaps (saves memory on long runs; ITL metrics are then empty)')
    .option('--no-plots', 'skip the SVG/PNG plots')
    .option('--keep-records <n>', 'per-request records kept in results.json and the latency CDF plot (the first N; aggregates and the timeline plot cover every request)', '100000')
    .addHelpText('after', EXAMPLES)
    .action(async (file: string | undefined, opts: { scenario?: string; duration?: string; requestRate?: string; seed?: string; resultDir?: string; itl: boolean; plots: boolean; keepRecords: string }) => {
      const which = file ?? opts.scenario;
      if (!which || (file && opts.scenario)) throw new CliError('give a scenario file or --scenario NAME (one of them)');
      const [{ loadScenario }, { simulate }, { summaryText }, { writeResultDir }, { defaultResultDir }, { JsonlLog }, { mkdir }, { join }] = await Promise.all([
        import('./scenario/schema.js'), import('./run.js'), import('../bench/report/summary.js'), import('../bench/report/write.js'), import('../bench/client/config.js'),
        import('../bench/report/json-file.js'), import('node:fs/promises'), import('node:path'),
      ]);
      const overrides = {
        ...(opts.duration !== undefined ? { durationS: positive('--duration', opts.duration) } : {}),
        ...(opts.requestRate !== undefined ? { rate: positive('--request-rate', opts.requestRate) } : {}),
        ...(opts.seed !== undefined ? { seed: positive('--seed', opts.seed, true) } : {}),
      };
      const dir = opts.resultDir ?? defaultResultDir().replace(/^bench-results/, 'sim-results');
      const sc = await scenarioOrError(() => loadScenario(which, overrides));
      io.err(`simulate: ${sc.name}: ${sc.cluster.nodes} × ${sc.cluster.devicesPerNode} ${sc.cluster.device}, app ${sc.app.file}, ${sc.workload.rate} req/s${sc.workload.limit.durationMs ? ` for ${sc.workload.limit.durationMs / 1000} simulated s` : ''}`);
      await mkdir(dir, { recursive: true });
      const log = new JsonlLog(join(dir, 'requests.jsonl'));
      // Ctrl-C stops the event loop at its next slice; what ended so far is written as partial results.
      const stop = new AbortController();
      const onSigint = () => {
        io.err('\nstopping: writing the partial results (Ctrl-C again quits at once)');
        stop.abort('Ctrl-C');
        process.once('SIGINT', () => process.exit(130));
      };
      process.once('SIGINT', onSigint);
      let out;
      try {
        out = await scenarioOrError(() => simulate(sc, {
          itl: opts.itl,
          keepRecords: positive('--keep-records', opts.keepRecords, true)!,
          onRecord: (r) => log.add(r),
          signal: stop.signal,
          onProgress: (s, n) => io.err(`simulate: ${s.toFixed(0)} simulated s, ${n} requests`),
        }));
      } finally {
        process.off('SIGINT', onSigint);
      }
      const jsonl = log.close();
      io.err(`deployment: ${out.deployment.map((d) => `${d.executors} × ${d.label}`).join(', ')}`);
      if (out.scaling.length) io.err(`autoscaler: ${out.scaling.length} scaling decisions (${out.scaling.slice(-3).map((d) => `${(d.atMs / 1000).toFixed(0)} s ${d.label} ${d.from}→${d.to}`).join('; ')}${out.scaling.length > 3 ? ' …' : ''})`);
      io.err(`simulated ${out.requests} requests (${out.events} events) in ${(out.wallMs / 1000).toFixed(1)} s wall: ${Math.round(out.requests / Math.max(out.wallMs / 1000, 1e-3))} requests per wall-clock second`);
      if (jsonl.note) io.err(jsonl.note);
      io.out(summaryText(out.results));
      const files = await writeResultDir(dir, { run: { ...out.results, requests_jsonl: jsonl } }, { plots: opts.plots });
      io.out(`\nresults: ${dir}/ (${[...files, 'requests.jsonl'].join(', ')})`);
      if (out.stoppedBy) {
        io.err(`simulate: ${out.stoppedBy}; the results are partial (results.json "partial": true)`);
        if (stop.signal.aborted) process.exitCode = 130;
        else throw new CliError(`the simulation ${out.stoppedBy}`);
      }
    });
}

/** A scenario's own errors become one-line CLI errors; anything else is a bug and keeps its stack. */
async function scenarioOrError<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof Error && ['ScenarioError', 'ModelOutputError'].includes(e.name)) throw new CliError(e.message);
    throw e;
  }
}
