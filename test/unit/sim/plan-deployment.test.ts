/** The simulator's plan deployments: `deployment: { mode: plan, file | plan }` runs a plan as `cornserve plan` writes it. */
import test from 'ava';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { loadScenario, parseScenario } from '../../../sim/scenario/schema.js';
import { simulate } from '../../../sim/run.js';
import type { Plan } from '../../../lib/plan.js';

const ENC = 'encoder:image';
const LLM = 'llm:cornserve/tiny-vlm-a';

const base = {
  name: 'plan-run',
  cluster: { nodes: 2, devicesPerNode: 2, device: 'a100-80g' },
  app: { file: 'functions/apps/mllm.ts', api: 'chat' },
  workload: { requestRate: 4, mix: 'text:0.5,image:0.5', inputLen: 100, outputLen: 16, imageSize: '448x448', numRequests: 60, seed: 3 },
  slo: 'ttft_ms=2000',
};

/** A split plan in `cornserve plan`'s format; the placement differs from what the allocation policy alone would pick. */
const plan = (over: Partial<Plan> = {}): Plan => ({
  version: 1,
  app: 'mllm',
  device: 'a100-80g',
  cluster: { nodes: 2, devicesPerNode: 2 },
  mode: 'split',
  components: [
    { label: ENC, stage: 'encoder', replicas: 1, devicesPerExecutor: 1 },
    { label: LLM, stage: 'llm', replicas: 3, devicesPerExecutor: 1 },
  ],
  placement: [{ node: 1, label: ENC, executors: 1 }, { node: 0, label: LLM, executors: 2 }, { node: 1, label: LLM, executors: 1 }],
  explanation: { screenRateRps: 1, goodputRps: null, bottleneck: LLM, headroom: {} },
  ...over,
});

const nodesOf = (o: Awaited<ReturnType<typeof simulate>>) => Object.fromEntries(o.deployment.map((d) => [d.label, [...d.nodes].sort()]));

test('an inline plan deploys its replicas on the nodes its placement names', async (t) => {
  const o = await simulate(await parseScenario({ ...base, deployment: { mode: 'plan', plan: plan() } }));
  t.deepEqual(nodesOf(o), { [ENC]: [1], [LLM]: [0, 0, 1] });
  t.is(o.results.completed, 60);
  t.deepEqual(o.invariants, { overCapacity: 0, startedBeforeProducers: 0, endedTwice: 0, neverEnded: 0 });
});

test('a plan file is read relative to the scenario file, and a mixed plan runs its 0-replica encoder inside the LLM', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sim-plan-'));
  const mixed = plan({
    mode: 'mixed',
    components: [{ label: ENC, stage: 'encoder', replicas: 0, devicesPerExecutor: 1 }, { label: LLM, stage: 'llm', replicas: 4, devicesPerExecutor: 1 }],
    placement: [{ node: 0, label: LLM, executors: 2 }, { node: 1, label: LLM, executors: 2 }],
  });
  await writeFile(join(dir, 'plan.yaml'), stringify(mixed));
  await writeFile(join(dir, 'scenario.yaml'), stringify({ ...base, deployment: { mode: 'plan', file: 'plan.yaml' } }));
  const o = await simulate(await loadScenario(join(dir, 'scenario.yaml')));
  t.deepEqual(nodesOf(o), { [ENC]: [], [LLM]: [0, 0, 1, 1] });
  t.is(o.results.completed, 60);
});

test('a plan whose executors hold two devices each takes two devices per executor', async (t) => {
  const tp2 = plan({
    components: [{ label: ENC, stage: 'encoder', replicas: 1, devicesPerExecutor: 1 }, { label: LLM, stage: 'llm', replicas: 1, devicesPerExecutor: 2 }],
    placement: [{ node: 1, label: ENC, executors: 1 }, { node: 0, label: LLM, executors: 1 }],
  });
  const o = await simulate(await parseScenario({ ...base, deployment: { mode: 'plan', plan: tp2 } }));
  t.deepEqual(nodesOf(o), { [ENC]: [1], [LLM]: [0] });
  // The same plan with the LLM on node 1 next to the encoder needs 3 devices there: refused.
  const crowded = { ...tp2, placement: [{ node: 1, label: ENC, executors: 1 }, { node: 1, label: LLM, executors: 1 }] };
  await t.throwsAsync(parseScenario({ ...base, deployment: { mode: 'plan', plan: crowded } }), { message: /deployment.plan: placement needs 3 devices on node 1, but a node of the cluster has 2/ });
});

test('a plan naming a task the app does not have is refused before the run, naming it', async (t) => {
  const bad = plan({ components: [...plan().components, { label: 'generator:image', stage: 'generator', replicas: 0, devicesPerExecutor: 1 }] });
  const sc = await parseScenario({ ...base, deployment: { mode: 'plan', plan: bad } });
  await t.throwsAsync(simulate(sc), { message: /deployment.plan: component 'generator:image': the app has no such task \(its tasks: / });
});

test('a plan that does not fit the cluster is refused before the run', async (t) => {
  const big = plan({ components: [{ label: ENC, stage: 'encoder', replicas: 1, devicesPerExecutor: 1 }, { label: LLM, stage: 'llm', replicas: 7, devicesPerExecutor: 1 }], placement: [{ node: 1, label: ENC, executors: 1 }, { node: 3, label: LLM, executors: 7 }] });
  await t.throwsAsync(parseScenario({ ...base, deployment: { mode: 'plan', plan: big } }), { message: /deployment.plan: placement puts 7 × llm:cornserve\/tiny-vlm-a on node 3, but the cluster has 2 node\(s\)/ });
  const many = plan({ placement: [{ node: 1, label: ENC, executors: 1 }, { node: 0, label: LLM, executors: 2 }] });
  await t.throwsAsync(parseScenario({ ...base, deployment: { mode: 'plan', plan: many } }), { message: /placement places 2 × llm:cornserve\/tiny-vlm-a, its component has 3 replicas/ });
  await t.throwsAsync(parseScenario({ ...base, deployment: { mode: 'plan', plan: { ...plan(), version: 2 } } }), { message: /deployment.plan: version/ });
  await t.throwsAsync(parseScenario({ ...base, deployment: { mode: 'plan', file: '/nonexistent/plan.yaml' } }), { message: /deployment.file \(\/nonexistent\/plan.yaml\): cannot read the plan/ });
  await t.throwsAsync(parseScenario({ ...base, deployment: { mode: 'plan' } }), { message: /mode plan needs a plan file \(deployment.file\) or an inline plan/ });
});
