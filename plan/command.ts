/**
 * `cornserve plan`: searches deployment plans for an app, a request mix, SLOs and a device budget (analytic
 * screen, then the simulator's goodput of the best candidates) and writes a plan file with its explanation.
 * The work is loaded only when the command runs.
 */
import { Command } from 'commander';
import { basename } from 'node:path';
import type { Io } from '../lib/io.js';
import { CliError } from '../lib/cli-errors.js';
import { addWorkloadOptions } from '../bench/client/workload-options.js';

const EXAMPLES = `
Examples:
  cornserve plan --apps functions/apps/mllm.ts --mix text:0.3,image:0.7 --image-size 1280x720 \\
      --input-len 200 --output-len 300 --slo ttft_ms=2000,tpot_ms=100 --devices 8 --out plan.yaml
  cornserve plan --apps functions/apps/mllm.ts --mix image:1 --slo ttft_ms=50 --devices 4   # infeasible: says which stage

The plan sets executors per task label, devices per executor, monolithic (encoders inside the LLM executors)
or split, and the placement on nodes (the live allocation policy's). Latency models come from the device
preset (sim/presets/gpus.yaml). See docs/experiment.md.
`;

export interface PlanOpts {
  apps: string[]; mix: string; slo: string; devices: string; nodes: string; device: string; inputLen: string; outputLen: string;
  rangeRatio: string; imageSize: string; audioSeconds: string; videoFrames: string; pattern: string; burstiness: string;
  duration: string; seed: string; minRate?: string; candidates: string; out: string; monolithic: boolean; tp?: boolean; splitOnly?: boolean;
}

const count = (name: string, v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new CliError(`${name} must be a positive integer, got '${v}'`);
  return n;
};

/** The scenario the planner evaluates candidates on (the simulator's schema). */
export function planScenarioRaw(o: PlanOpts): Record<string, unknown> {
  if (o.apps.length !== 1) throw new CliError(`--apps: give one app file (plans for several apps sharing devices are not supported yet), got ${o.apps.length}`);
  const devices = count('--devices', o.devices);
  const nodes = count('--nodes', o.nodes);
  if (devices % nodes !== 0) throw new CliError(`--devices ${devices} must split evenly over --nodes ${nodes}`);
  return {
    name: `plan-${basename(o.apps[0]!).replace(/\.[tj]s$/, '')}`,
    cluster: { nodes, devicesPerNode: devices / nodes, device: o.device },
    app: { file: o.apps[0]!, api: 'chat' },
    workload: { mix: o.mix, inputLen: o.inputLen, outputLen: o.outputLen, rangeRatio: o.rangeRatio, imageSize: o.imageSize, audioSeconds: o.audioSeconds, videoFrames: o.videoFrames, pattern: o.pattern, burstiness: o.burstiness, duration: o.duration, seed: o.seed },
    slo: o.slo,
  };
}

export function planCommand(io: Io): Command {
  return addWorkloadOptions(new Command('plan')
    .description('search deployment plans (replicas per task, devices per executor, monolithic or split, placement) for an app, a mix, SLOs and a device budget; writes a plan file')
    .requiredOption('--apps <files...>', 'the app file (one)')
    .requiredOption('--devices <n>', 'device budget')
    .option('--nodes <k>', 'nodes the devices are spread over (evenly)', '1')
    .option('--device <preset>', 'latency preset (sim/presets/gpus.yaml)', 'a100-80g')
    .option('--mix <mix>', 'request mix KIND:WEIGHT,...', 'text:0.3,image:0.5,video:0.1,audio:0.1')
    .requiredOption('--slo <slo>', 'SLOs, e.g. ttft_ms=2000,tpot_ms=100 (goodput = highest rate with ≥ 90% attainment; required: without one every plan\'s goodput is 0)')
    , { inputLen: '200', outputLen: '300', imageSize: '1280x720', audioSeconds: '5', videoFrames: '8' })
    .option('--duration <s>', 'simulated seconds per evaluation', '60')
    .option('--min-rate <r>', 'refuse (infeasible) if no plan can sustain this many req/s')
    .option('--candidates <k>', 'split candidates simulated after the screen', '4')
    .option('--no-monolithic', 'do not consider the monolithic plan')
    .option('--split-only', 'only plans where every task runs on executors of its own (no monolithic, no encoder kept inside its LLM): what `apply-plan` can deploy on an app that calls its encoders as tasks')
    .option('--no-tp', 'keep each task\'s own devices per executor (by default LLMs are also tried at tensor-parallel 2 and 4, encoders at 2)')
    .option('--out <file>', 'plan file to write (YAML)', 'plan.yaml')
    .addHelpText('after', EXAMPLES)
    .action(async (o: PlanOpts) => {
      const [{ parseScenario }, { makePlan }, { InfeasiblePlanError }, { writeFile }, { stringify }] = await Promise.all([
        import('../sim/scenario/schema.js'), import('./make.js'), import('./search.js'), import('node:fs/promises'), import('yaml'),
      ]);
      const raw = planScenarioRaw(o);
      let out;
      try {
        const sc = await parseScenario(raw);
        const { loadApp } = await import('../sim/apps/record.js');
        const app = await loadApp(sc.app.file, '--apps');
        out = await makePlan(sc, {
          devices: count('--devices', o.devices), appName: app.name, fineCandidates: count('--candidates', o.candidates), monolithic: o.monolithic && !o.splitOnly, tp: o.tp !== false,
          ...(o.splitOnly ? { colocate: false } : {}),
          ...(o.minRate !== undefined ? { minRateRps: Number(o.minRate) } : {}),
        });
      } catch (e) {
        if (e instanceof InfeasiblePlanError) throw new CliError(`infeasible (stage ${e.stage}): ${e.message}; no plan written`);
        if (e instanceof Error && ['ScenarioError', 'ModelOutputError', 'PlanError'].includes(e.name)) throw new CliError(e.message);
        throw e;
      }
      const { plan, search, unfit } = out;
      for (const why of unfit) io.err(`left out (does not fit): ${why}`);
      io.err(`screened ${search.screened} plans, simulated ${search.evaluated.length}:`);
      for (const c of [...search.evaluated].sort((a, b) => b.goodputRps - a.goodputRps)) {
        const mode = c.mode === 'split' && Object.values(c.replicas).some((n) => n === 0) ? 'mixed' : c.mode;
        io.err(`  ${mode.padEnd(10)} ${Object.entries(c.replicas).map(([l, n]) => `${n} × ${l}${n > 0 && (c.devicesPerExecutor?.[l] ?? 1) > 1 ? ` (TP ${c.devicesPerExecutor![l]})` : ''}`).join(', ').padEnd(60)} screen ${c.screenRateRps.toFixed(2)} req/s, goodput ${c.goodputRps.toFixed(2)} req/s`);
      }
      io.out(`plan: ${plan.mode}, ${plan.components.map((c) => `${c.replicas} × ${c.label}${c.replicas > 0 && c.devicesPerExecutor > 1 ? ` (TP ${c.devicesPerExecutor})` : ''}`).join(', ')}`);
      io.out(`goodput ${plan.explanation.goodputRps?.toFixed(2)} req/s (≥ 90% SLO attainment, simulated); bottleneck stage ${plan.explanation.bottleneck}`);
      io.out(`headroom (capacity ÷ demand at that rate): ${Object.entries(plan.explanation.headroom).map(([l, h]) => `${l} ${h.toFixed(2)}`).join(', ')}`);
      await writeFile(o.out, stringify(plan));
      io.out(`plan written to ${o.out}`);
      const tp = plan.components.filter((c) => c.replicas > 0 && c.devicesPerExecutor > 1);
      if (tp.length)
        io.out(`note: this plan runs ${tp.map((c) => `${c.label} at tensor-parallel ${c.devicesPerExecutor}`).join(', ')}: apply-plan deploys it on an app whose tasks are registered with that degree; for the app's tasks as deployed, plan with --no-tp`);
      if (plan.mode !== 'split')
        io.out(`note: this plan keeps encoders inside their LLM: apply-plan deploys it on an app registered with the encoder inside (encoderFission: false); for an app that calls its encoders as tasks, plan with --split-only`);
    });
}
