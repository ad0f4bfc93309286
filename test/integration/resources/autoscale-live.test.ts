/**
 * Live autoscaling tests: real `up`-style platforms (startPlatform: the in-memory Store, echo executors as
 * child processes), echo tasks of exact capacity (serviceTimeMs + maxConcurrency: one executor serves
 * maxConcurrency ÷ service time req/s), short windows and a fast tick. Load is open loop (a fixed request rate, each
 * request on its own) so offered load does not shrink when executors are short. Every wait is for an observable
 * condition with a generous bound; nothing asserts on durations except "not before" lower bounds, which a slow
 * machine only makes easier to meet.
 */
import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { startPlatform, type TestPlatform } from '../../helpers/platform.js';
import type { AutoscaleLoopOptions } from '../../../control/resources/autoscale-loop.js';

const WAIT = { timeoutMs: 120_000, intervalMs: 200 };

async function platform(t: import('ava').ExecutionContext, autoscale: AutoscaleLoopOptions, devices = 4): Promise<TestPlatform> {
  const p = await startPlatform({ port: 0, devices, autoscale });
  t.teardown(() => p.stop());
  return p;
}

interface Stage {
  name: string;
  serviceTimeMs: number;
  maxConcurrency: number;
  policy: { min: number; max: number; target: number };
}

/** An app calling its stages in sequence (`{text}` -> `{echo}` through each), with an autoscaling policy per stage. */
const chainAppSource = (name: string, stages: Stage[]) => `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
${stages.map((s) => `const ${s.name} = new EchoTask({ serviceTimeMs: ${s.serviceTimeMs}, maxConcurrency: ${s.maxConcurrency} });`).join('\n')}
export default defineApp({
  name: '${name}', tasks: { ${stages.map((s) => s.name).join(', ')} },
  autoscaling: { ${stages.map((s) => `${s.name}: ${JSON.stringify(s.policy)}`).join(', ')} },
  request: z.object({ text: z.string() }), response: z.object({ echo: z.string() }),
  async serve(req) {
    let out = { echo: req.text };
    ${stages.map((s) => `out = await ${s.name}.call({ text: out.echo });`).join('\n    ')}
    return out;
  },
});`;

/** Open-loop load on an app: `rps` requests per second (changeable), each on its own; stop() resolves every status. */
function openLoad(p: TestPlatform, app: string, rps: number) {
  const statuses: Array<Promise<number>> = [];
  let rate = rps;
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    timer = setTimeout(() => {
      if (rate > 0) statuses.push(p.invoke(app, { text: 'x' }, { timeoutMs: 120_000 }).then((r) => (void r.body?.cancel(), r.status), () => 0));
      schedule();
    }, rate > 0 ? 1000 / rate : 200);
  };
  schedule();
  return {
    setRate(r: number) {
      rate = r;
    },
    async stop(): Promise<number[]> {
      clearTimeout(timer);
      rate = 0;
      return Promise.all(statuses);
    },
  };
}

/** The app's unit task ids by stage name (registration order = the app's tasks). */
async function stageIds(p: TestPlatform, stages: Stage[]): Promise<Record<string, string>> {
  const tasks = await p.resources.listTasks();
  const ids: Record<string, string> = {};
  for (const s of stages) {
    const task = tasks.find((t) => JSON.stringify(t.task).includes(`"serviceTimeMs":${s.serviceTimeMs}`));
    if (!task) throw new Error(`no unit task for stage ${s.name}`);
    ids[s.name] = task.taskId;
  }
  return ids;
}

const readyCount = async (p: TestPlatform, taskId: string) => (await p.store.listExecutors(taskId)).filter((r) => r.state === 'ready').length;

test.serial('a step of load on a two-stage app scales both stages up', async (t) => {
  // Each stage: one executor serves 1 ÷ 0.2 s = 5 req/s. 12 req/s needs 3 executors of each (max 2: both go to 2).
  const p = await platform(t, { tickMs: 300, autoscaler: { stableWindowMs: 10_000, panicWindowMs: 3000, scaleDownDelayMs: 30_000 } });
  const stages: Stage[] = [
    { name: 'first', serviceTimeMs: 200, maxConcurrency: 1, policy: { min: 1, max: 2, target: 1 } },
    { name: 'second', serviceTimeMs: 201, maxConcurrency: 1, policy: { min: 1, max: 2, target: 1 } },
  ];
  await p.register(chainAppSource('as-chain', stages));
  const ids = await stageIds(p, stages);
  const load = openLoad(p, 'as-chain', 12);
  t.teardown(() => void load.stop());
  await waitUntil('both stages at two ready executors', async () => (await readyCount(p, ids.first!)) === 2 && (await readyCount(p, ids.second!)) === 2, WAIT);
  const statuses = await load.stop();
  t.deepEqual([...new Set(statuses)], [200]);
  for (const id of [ids.first!, ids.second!]) {
    const d = (await p.resources.status(id))!.autoscale!.lastDecision!;
    t.true(d.to > d.from, JSON.stringify(d));
  }
});

test.serial('steady load makes at most one decision per task once settled (no flapping)', async (t) => {
  // One executor serves 1 ÷ 0.1 s = 10 req/s; 12 req/s steady needs 2 (60 % busy): neither 1 nor 3 is near.
  const p = await platform(t, { tickMs: 300, autoscaler: { stableWindowMs: 4000, panicWindowMs: 1500, scaleDownDelayMs: 1000 } });
  const stages: Stage[] = [{ name: 'steady', serviceTimeMs: 100, maxConcurrency: 1, policy: { min: 1, max: 3, target: 1 } }];
  await p.register(chainAppSource('as-steady', stages));
  const { steady: id } = await stageIds(p, stages);
  const load = openLoad(p, 'as-steady', 12);
  t.teardown(() => void load.stop());
  // Settled: scaled up, then a stable window and a scale-down delay without any decision.
  await waitUntil('the task scaled up and quiet for 5 s', async () => {
    const d = (await p.resources.status(id!))?.autoscale?.lastDecision;
    return d !== undefined && (await readyCount(p, id!)) >= 2 && Date.now() - d.at > 5000;
  }, WAIT);
  const decisions = new Set<number>();
  const executors = new Set<number>();
  const settledAt = (await p.resources.status(id!))!.autoscale!.lastDecision!.at;
  const watchUntil = Date.now() + 20_000; // 66 ticks of steady load
  while (Date.now() < watchUntil) {
    const status = await p.resources.status(id!);
    const d = status?.autoscale?.lastDecision;
    if (d && d.at !== settledAt) decisions.add(d.at);
    executors.add(await readyCount(p, id!));
    await new Promise((r) => setTimeout(r, 100));
  }
  const statuses = await load.stop();
  t.true(decisions.size <= 1, `decisions after settling: ${decisions.size}`);
  t.true(executors.size <= 2, `executor counts seen: ${[...executors].join(', ')}`);
  t.deepEqual([...new Set(statuses)], [200]);
});

test.serial('load removed: the scale-down waits for the scale-down delay, drains, and loses no request', async (t) => {
  const scaleDownDelayMs = 3000;
  const p = await platform(t, { tickMs: 300, autoscaler: { stableWindowMs: 4000, panicWindowMs: 1500, scaleDownDelayMs } });
  // 5 req/s per executor: 8 req/s needs 2; a trickle of 1 req/s (at most one in flight: half the target) needs 1.
  const stages: Stage[] = [{ name: 'down', serviceTimeMs: 200, maxConcurrency: 1, policy: { min: 1, max: 2, target: 2 } }];
  await p.register(chainAppSource('as-down', stages));
  const { down: id } = await stageIds(p, stages);
  const load = openLoad(p, 'as-down', 8);
  t.teardown(() => void load.stop());
  await waitUntil('the task at two ready executors', async () => (await readyCount(p, id!)) === 2, WAIT);
  load.setRate(1); // the trickle keeps requests in flight while an executor drains
  const removedAt = Date.now();
  await waitUntil('the task back at one executor', async () => (await p.store.listExecutors(id!)).length === 1, WAIT).catch(async (e: unknown) => {
    t.log(JSON.stringify(await p.resources.status(id!)), JSON.stringify(await p.store.listExecutors(id!)));
    throw e;
  });
  const statuses = await load.stop();
  const d = (await p.resources.status(id!))!.autoscale!.lastDecision!;
  t.deepEqual([d.from, d.to], [2, 1], d.reason);
  t.true(d.at >= removedAt + scaleDownDelayMs, `scaled down ${d.at - removedAt} ms after the load went`);
  t.true(statuses.length > 0);
  t.deepEqual([...new Set(statuses)], [200], 'every request answered, including the ones in flight on the drained executor');
});

test.serial('four devices, two apps whose demand swaps: the devices follow the demand', async (t) => {
  const p = await platform(t, { tickMs: 300, autoscaler: { stableWindowMs: 4000, panicWindowMs: 1500, scaleDownDelayMs: 1000 } }, 4);
  // 5 req/s per executor; 14 req/s needs 3; each app may have 1..3, together at most the 4 devices.
  const a: Stage[] = [{ name: 'left', serviceTimeMs: 200, maxConcurrency: 1, policy: { min: 1, max: 3, target: 1 } }];
  const b: Stage[] = [{ name: 'right', serviceTimeMs: 202, maxConcurrency: 1, policy: { min: 1, max: 3, target: 1 } }];
  await p.register(chainAppSource('as-left', a));
  await p.register(chainAppSource('as-right', b));
  const { left } = await stageIds(p, a);
  const { right } = await stageIds(p, b);
  let most = 0;
  const devicesInUse = async () => {
    const n = (await p.store.listExecutors()).length;
    most = Math.max(most, n);
    return n;
  };
  const leftLoad = openLoad(p, 'as-left', 14);
  const rightLoad = openLoad(p, 'as-right', 0);
  t.teardown(() => void Promise.all([leftLoad.stop(), rightLoad.stop()]));
  await waitUntil('left at 3 executors, right at 1', async () => (await devicesInUse(), (await readyCount(p, left!)) === 3 && (await readyCount(p, right!)) === 1), WAIT);
  leftLoad.setRate(0);
  rightLoad.setRate(14);
  await waitUntil('right at 3 executors, left at 1', async () => (await devicesInUse(), (await readyCount(p, right!)) === 3 && (await readyCount(p, left!)) === 1), WAIT);
  const statuses = [...(await leftLoad.stop()), ...(await rightLoad.stop())];
  t.true(most <= 4, `executors at once: ${most}`);
  t.deepEqual([...new Set(statuses)], [200]);
});
