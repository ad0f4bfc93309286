/**
 * The disaggregation experiment's short version (CI) and the planner's quality against exhaustive search,
 * both in the simulator with the a100-80g preset.
 */
import test from 'ava';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runScenario, scenarios } from '../../../experiment/disaggregation.js';
import { parseScenario } from '../../../sim/scenario/schema.js';
import { demandFor } from '../../../plan/make.js';
import { goodputOf } from '../../../plan/goodput.js';
import { monolithicCandidate, screen, searchPlan, splits } from '../../../plan/search.js';
import { planCommand } from '../../../plan/command.js';

const quick = (name: string) => scenarios(true).find((s) => s.name === name)!;
let anyToAny: ReturnType<typeof runScenario> | undefined;
/** The quick any-to-any run, shared by the tests that read it (one simulation sweep). */
const quickAnyToAny = () => (anyToAny ??= runScenario(quick('any-to-any/poisson')));

test('quick any-to-any: disaggregated beats monolithic in goodput and p99 E2EL (the monolithic replicas hold a generator each)', async (t) => {
  const r = await quickAnyToAny();
  const m = r.systems.monolithic!;
  const d = r.systems.disaggregated!;
  t.true(d.goodput_rps > m.goodput_rps, `disaggregated ${d.goodput_rps} vs monolithic ${m.goodput_rps} req/s`);
  t.true(d.goodput_ratio_vs_monolithic! > 1);
  t.true(d.p99_e2el_ratio_vs_monolithic! > 1);
  t.true(r.systems.planner!.goodput_rps >= d.goodput_rps * 0.95, 'the planner’s free choice is at least as good as the fully split one');
});

test('quick any-to-any: the autoscaler system starts from the static split, sized from profiled capacity, and keeps its goodput', async (t) => {
  const r = await quickAnyToAny();
  const a = r.systems.autoscaler!;
  t.deepEqual(a.replicas, r.systems.disaggregated!.replicas);
  t.true(a.goodput_rps >= 0.9 * r.systems.disaggregated!.goodput_rps, `autoscaler ${a.goodput_rps} vs static split ${r.systems.disaggregated!.goodput_rps} req/s`);
  const inputs = a.autoscale_inputs!;
  const llm = Object.entries(inputs).find(([l]) => l.startsWith('llm:'))![1];
  const enc = Object.entries(inputs).find(([l]) => l.startsWith('encoder:'))![1];
  t.true(llm.target > 2 && llm.target > enc.target, `an LLM executor is sized by the batch it fills (target ${llm.target}), an encoder by what it overlaps (${enc.target})`);
  t.true(llm.per_executor_rps > 0 && enc.per_executor_rps > llm.per_executor_rps);
  for (const [label, n] of Object.entries(a.replicas_at_end_of_fixed_run!)) t.true(Number.isInteger(n) && n >= 1, `${label}: ${n}`);
  t.true(Number.isFinite(a.goodput_ratio_vs_monolithic) && a.goodput_rps > 0);
  t.true(Number.isFinite(a.p99_e2el_ratio_vs_monolithic));
});

test('quick mllm: with encoders this cheap next to the LLM, monolithic beats a fully split plan and the planner keeps the encoders inside', async (t) => {
  const r = await runScenario(quick('mllm/poisson'));
  t.true(r.systems.monolithic!.goodput_rps > r.systems.disaggregated!.goodput_rps);
  t.true(r.systems.planner!.goodput_rps >= r.systems.monolithic!.goodput_rps * 0.95);
});

test('on a small instance the planner’s goodput is within 5% of exhaustive search over every plan', async (t) => {
  const s = quick('any-to-any/poisson');
  const sc = await parseScenario({ ...s.raw, cluster: { nodes: 1, devicesPerNode: 4, device: 'a100-80g' }, workload: { ...(s.raw.workload as object), duration: 20 } });
  const { demand } = await demandFor(sc);
  const evaluate = (c: Parameters<typeof screen>[1]) => goodputOf(sc, c, screen(demand.stages, c).screenRateRps * 0.8);
  const planned = await searchPlan({ demand, devices: 4, fineCandidates: 2 }, (c) => evaluate(c));
  const all = [...splits(demand.stages, 4, true).map((replicas) => ({ mode: 'split' as const, replicas })), monolithicCandidate(demand.stages, 4)!];
  let best = 0;
  for (const c of all) best = Math.max(best, await evaluate(c));
  t.true(all.length >= 4, `${all.length} plans searched exhaustively`);
  t.true(planned.best.goodputRps >= best * 0.95, `planner ${planned.best.goodputRps} vs exhaustive best ${best} req/s`);
});

test('cornserve plan with an SLO no request can meet says which stage and writes no plan', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plan-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'plan.yaml');
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  await t.throwsAsync(planCommand(io).parseAsync(['--apps', 'functions/apps/mllm.ts', '--mix', 'image:1', '--slo', 'ttft_ms=50', '--devices', '4', '--out', out], { from: 'user' }),
    { message: /infeasible \(stage llm:cornserve\/tiny-vlm-a\): slo: ttft_ms=50 cannot be met/ });
  t.false(existsSync(out));
});

test('cornserve plan --split-only writes a plan where every task has executors of its own (what apply-plan deploys on the app as written)', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plan-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'plan.yaml');
  const lines: string[] = [];
  const io = { out: (l: string) => void lines.push(l), err: (l: string) => void lines.push(l) };
  // The local-cpu preset's encoder is cheap next to its LLM: unrestricted, the planner keeps it inside (quick mllm test above).
  await planCommand(io).parseAsync(['--apps', 'functions/apps/mllm.ts', '--devices', '4', '--device', 'local-cpu', '--mix', 'text:0.5,image:0.5', '--slo', 'ttft_ms=3000,tpot_ms=100', '--duration', '20', '--split-only', '--out', out], { from: 'user' }).catch((e) => t.fail(String(e)));
  const { parsePlan } = await import('../../../lib/plan.js');
  const { parse } = await import('yaml');
  const plan = parsePlan(parse(await readFile(out, 'utf8')));
  t.is(plan.mode, 'split');
  t.true(plan.components.every((c) => c.replicas >= 1), JSON.stringify(plan.components));
  t.false(lines.some((l) => /^\s+(mixed|monolithic)\s/.test(l)), 'no colocated candidate was considered');
});

test('cornserve plan writes a plan file whose executors fit the device budget', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plan-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'plan.yaml');
  const io = { out: () => {}, err: () => {} };
  await planCommand(io).parseAsync(['--apps', 'functions/apps/mllm.ts', '--devices', '4', '--mix', 'text:0.5,image:0.5', '--slo', 'ttft_ms=3000,tpot_ms=100', '--duration', '20', '--out', out], { from: 'user' }).catch((e) => t.fail(String(e)));
  const { parsePlan } = await import('../../../lib/plan.js');
  const { parse } = await import('yaml');
  const plan = parsePlan(parse(await readFile(out, 'utf8')));
  t.is(plan.app, 'mllm');
  t.true(plan.components.reduce((a, c) => a + c.replicas * c.devicesPerExecutor, 0) <= 4);
  t.is(plan.placement.reduce((a, p) => a + p.executors, 0), plan.components.reduce((a, c) => a + c.replicas, 0));
  t.truthy(plan.explanation.bottleneck);
});
