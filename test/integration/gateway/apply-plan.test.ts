/**
 * `cornserve apply-plan` on the local platform: a plan `cornserve plan` made (the simulator's planner) is deployed
 * through POST /plans/apply and the executors /tasks/list shows match it; bad plans are rejected whole (422 naming
 * the field) with nothing changed; the autoscaler starts from the plan's counts.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { stringify } from 'yaml';
import { GatewayClient, type TaskInfo } from '../../../control/gateway/client.js';
import { applyPlanCommand } from '../../../control/cli/commands.js';
import { planScenarioRaw, type PlanOpts } from '../../../plan/command.js';
import { makePlan } from '../../../plan/make.js';
import type { Plan } from '../../../lib/plan.js';
import { parseScenario } from '../../../sim/scenario/schema.js';
import { VALIDATION_APP, VALIDATION_APP_FILE } from '../../../sim/validate.js';
import { TEST_ADMIN_TOKEN, startPlatform, type TestPlatform } from '../../helpers/platform.js';

const DEVICES = 6;
// No scale-down while the test runs: the executors it counts are the plan's, not the autoscaler's later choice.
const AUTOSCALE = { tickMs: 500, autoscaler: { scaleDownDelayMs: 3_600_000 } };

/** Two echo tasks (two labels) in one app, for plans that touch several tasks. */
const PAIR_APP = `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
const a = new EchoTask({ serviceTimeMs: 1 });
const b = new EchoTask({ serviceTimeMs: 2 });
export default defineApp({
  name: 'pair', tasks: { a, b },
  request: z.object({ text: z.string() }), response: z.object({ echo: z.string() }),
  async serve(req) { await a.call({ text: req.text }); return b.call({ text: req.text }); },
});`;

let p: TestPlatform;
let dir: string;
test.before(async () => {
  p = await startPlatform({ devices: DEVICES, autoscale: AUTOSCALE });
  await p.register(VALIDATION_APP_FILE);
  await p.register(PAIR_APP);
  dir = await mkdtemp(join(tmpdir(), 'apply-plan-'));
});
test.after.always(async () => {
  await p?.stop();
});

const tasks = async () => (await (await fetch(`${p.gatewayUrl}/tasks/list`)).json()) as TaskInfo[];
const appTaskIds = async (app: string) => (await p.store.listApps()).find((a) => a.name === app)!.taskIds;
/** Ready executors per task id, and the platform's processes: what "nothing changed" compares. */
const snapshot = async () => ({
  executors: Object.fromEntries((await tasks()).map((t) => [t.task_id, t.executors.filter((e) => e.state === 'ready').length])),
  processes: p.platform.processes().length,
});

/** A hand-written plan for the pair app (labels as /tasks/list names the tasks). */
async function pairPlan(replicas: [number, number], devicesPerExecutor = 1): Promise<Plan> {
  const ids = await appTaskIds('pair');
  const names = (await tasks()).filter((t) => ids.includes(t.task_id)).map((t) => t.name).sort();
  const labels = names.map((n) => `echo:${n}`);
  return {
    version: 1, app: 'pair', device: 'local-cpu', cluster: { nodes: 1, devicesPerNode: DEVICES }, mode: 'split',
    components: labels.map((label, i) => ({ label, stage: 'echo' as const, replicas: replicas[i]!, devicesPerExecutor })),
    placement: labels.map((label, i) => ({ node: 0, label, executors: replicas[i]! })),
    explanation: { screenRateRps: 1, goodputRps: null, bottleneck: labels[0]!, headroom: {} },
  };
}

const apply = (plan: unknown) => p.admin('/plans/apply', plan);
const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; message: string; details?: { field?: string } } }).error;

test.serial('a plan whose executors do not fit the free devices is rejected whole, naming the field, and nothing changes', async (t) => {
  const before = await snapshot();
  // echo-timed holds 1 device: 2 + 4 of the pair's do not fit the other 5.
  const res = await apply(await pairPlan([2, 4]));
  t.is(res.status, 422);
  const e = await errorOf(res);
  t.is(e.code, 'INVALID_PLAN');
  t.regex(e.message, /^components\[\d\]\.replicas: .*do not fit.*nothing was changed/);
  t.deepEqual(await snapshot(), before);
});

test.serial('a plan naming a task its app does not have is rejected, naming the label, and nothing changes', async (t) => {
  const before = await snapshot();
  const plan = await pairPlan([2, 2]);
  plan.components[1]!.label = 'echo:no-such-task';
  plan.placement[1]!.label = 'echo:no-such-task';
  const res = await apply(plan);
  t.is(res.status, 422);
  const e = await errorOf(res);
  t.is(e.details?.field, 'components[1].label');
  t.regex(e.message, /'echo:no-such-task' is not a task of app pair \(its tasks: echo:/);
  t.deepEqual(await snapshot(), before);
});

test.serial('a plan with other devices per executor than the deployed task is rejected, naming the field', async (t) => {
  const before = await snapshot();
  const res = await apply(await pairPlan([1, 2], 2));
  t.is(res.status, 422);
  t.regex((await errorOf(res)).message, /^components\[0\]\.devicesPerExecutor: the plan gives 2 device\(s\) per executor but task .* runs 1/);
  t.deepEqual(await snapshot(), before);
});

test.serial('a plan that is not a plan is rejected naming the field, and a plan for an unregistered app is a 404', async (t) => {
  const bad = await apply({ ...(await pairPlan([1, 1])), version: 2 });
  t.is(bad.status, 422);
  t.regex((await errorOf(bad)).message, /^version: /);
  const unknown = await apply({ ...(await pairPlan([1, 1])), app: 'nope' });
  t.is(unknown.status, 404);
});

test.serial('a plan from cornserve plan round-trips through apply-plan: the deployed executors match it', async (t) => {
  const o: PlanOpts = {
    apps: [VALIDATION_APP_FILE], mix: 'text:1', devices: '4', nodes: '1', device: 'local-cpu', inputLen: '10', outputLen: '1', rangeRatio: '0',
    slo: 'e2el_ms=5000', imageSize: '64x64', audioSeconds: '1', videoFrames: '1', pattern: 'constant', burstiness: '1', duration: '20', seed: '0', candidates: '1', out: '', monolithic: true,
  };
  const { plan } = await makePlan(await parseScenario({ ...planScenarioRaw(o), app: { file: VALIDATION_APP_FILE, api: 'invoke', request: { text: 'hi' } } }), { devices: 4, appName: VALIDATION_APP, fineCandidates: 1 });
  t.is(plan.components.length, 1);
  t.is(plan.components[0]!.replicas, 4); // one stage on 4 devices: every device serves it
  const file = join(dir, 'plan.yaml');
  await writeFile(file, stringify(plan));
  const out: string[] = [];
  await applyPlanCommand(new GatewayClient(p.gatewayUrl, TEST_ADMIN_TOKEN, 60_000), file, { out: (l) => out.push(l), err: () => {} });
  const [id] = await appTaskIds(VALIDATION_APP);
  const task = (await tasks()).find((x) => x.task_id === id)!;
  t.is(`echo:${task.name}`, plan.components[0]!.label);
  t.is(task.executors.filter((e) => e.state === 'ready').length, 4);
  t.is(task.devices.length, 4);
  t.regex(out.join('\n'), /4 executor\(s\), 4 device\(s\); autoscaler starts from 4/);
});

test.serial('after a plan is applied the autoscaler starts from its counts and keeps the policy bounds', async (t) => {
  const [id] = await appTaskIds(VALIDATION_APP);
  const record = await p.store.getAutoscale(id!);
  t.is(record?.desired, 4);
  t.regex(record?.lastDecision?.reason ?? '', /plan applied/);
  t.like(record?.policy, { min: 1, max: DEVICES });
});

test.serial('a plan with fewer executors drains the task down to them', async (t) => {
  const [id] = await appTaskIds(VALIDATION_APP);
  const label = `echo:${(await tasks()).find((x) => x.task_id === id)!.name}`;
  const plan = { ...(await pairPlan([1, 1])), app: VALIDATION_APP, components: [{ label, stage: 'echo', replicas: 2, devicesPerExecutor: 1 }], placement: [{ node: 0, label, executors: 2 }] };
  const res = await apply(plan);
  t.is(res.status, 200, JSON.stringify(await res.clone().json()));
  const task = (await tasks()).find((x) => x.task_id === id)!;
  t.is(task.executors.length, 2);
  t.is(task.devices.length, 2);
});
