import test from 'ava';
import { Autoscaler, type TaskSnapshot } from '../../../../policies/autoscaler.js';
import type { AppLoad, AutoscalePolicy, TaskLoad } from '../../../../lib/autoscale.js';
import { planPool } from '../../../../policies/pool.js';

const TICK = 2000;
const fixed = (rps: number) => (taskId: string) => ({ taskId, perExecutorRps: rps, source: 'profile' as const });
const load = (taskId: string, at: number, arrivalRps: number, inFlight = 0, held = 0): TaskLoad => ({ taskId, at, windowMs: TICK, arrivalRps, inFlight, held });
const app = (appId: string, at: number, requestRps: number, invocationsPerRequest: Record<string, number>): AppLoad => ({ appId, at, windowMs: TICK, requestRps, invocationsPerRequest });

/** Runs ticks from `start` to `end`, applying every decision at once; returns the decisions (from != to) with their time. */
function run(
  scaler: Autoscaler,
  counts: Map<string, number>,
  policy: AutoscalePolicy,
  start: number,
  end: number,
  loads: (now: number) => { tasks: TaskLoad[]; apps: AppLoad[] },
) {
  const decisions: Array<{ at: number; taskId: string; from: number; to: number; reason: string }> = [];
  for (let now = start; now <= end; now += TICK) {
    const { tasks, apps } = loads(now);
    scaler.observe(tasks, apps);
    const snapshot: TaskSnapshot[] = [...counts].map(([taskId, executors]) => ({ taskId, executors, policy }));
    for (const w of scaler.decide(now, snapshot)) {
      if (w.to !== w.from) decisions.push({ at: now, taskId: w.taskId, from: w.from, to: w.to, reason: w.reason });
      counts.set(w.taskId, w.to);
    }
  }
  return decisions;
}

test('a step in an app rate scales every stage of its graph within the panic window (graph-aware)', (t) => {
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, fixed(10));
  const counts = new Map([['encoder', 1], ['llm', 1]]);
  const policy = { min: 1, max: 10, target: 2 };
  const graph = { encoder: 2, llm: 1 };
  // 60 s at 4 req/s, then 20 req/s. Only the encoder's arrivals are seen (the llm's queue has not built yet):
  // the llm is sized from the app rate × its invocations per request.
  const loads = (now: number) => {
    const rps = now < 60_000 ? 4 : 20;
    return { tasks: [load('encoder', now, rps * 2)], apps: [app('a', now, rps, graph)] };
  };
  run(scaler, counts, policy, 0, 58_000, loads);
  t.deepEqual([...counts], [['encoder', 1], ['llm', 1]]);
  const after = run(scaler, counts, policy, 60_000, 66_000, loads);
  t.is(counts.get('encoder'), 4); // 40 req/s ÷ 10
  t.is(counts.get('llm'), 2); // 20 req/s × 1 ÷ 10
  t.true(after.every((d) => d.at <= 66_000 && /panic/.test(d.reason)), JSON.stringify(after));
});

test('two minutes of steady noisy load make at most one decision per task after settling', (t) => {
  const scaler = new Autoscaler({}, fixed(10));
  const counts = new Map([['a', 1], ['b', 1]]);
  const policy = { min: 1, max: 20, target: 2 };
  let seed = 7;
  const noise = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31 - 0.5) * 0.3; // ±15 %
  const loads = (now: number) => ({ tasks: [load('a', now, 30 * (1 + noise())), load('b', now, 19.5 * (1 + noise()))], apps: [] });
  run(scaler, counts, policy, 0, 60_000, loads); // settling
  const later = run(scaler, counts, policy, 62_000, 182_000, loads);
  for (const id of ['a', 'b']) t.true(later.filter((d) => d.taskId === id).length <= 1, JSON.stringify(later));
});

test('removed load scales down only after the stable window and the delay, at most halving per step', (t) => {
  const o = { stableWindowMs: 20_000, panicWindowMs: 4_000, scaleDownDelayMs: 10_000 };
  const scaler = new Autoscaler(o, fixed(10));
  const counts = new Map([['a', 8]]);
  const policy = { min: 1, max: 10, target: 2 };
  const loads = (now: number) => ({ tasks: [load('a', now, now < 40_000 ? 80 : 0)], apps: [] });
  const decisions = run(scaler, counts, policy, 0, 200_000, loads);
  t.true(decisions.length >= 3, JSON.stringify(decisions));
  t.true(decisions[0]!.at >= 40_000 + o.stableWindowMs * 0.8 + o.scaleDownDelayMs, JSON.stringify(decisions[0]));
  for (const d of decisions) t.true(d.to < d.from && d.to >= Math.ceil(d.from / 2), JSON.stringify(d));
  t.is(counts.get('a'), 1);
});

test('invocations held at zero executors ask for one at once', (t) => {
  const scaler = new Autoscaler({}, () => undefined);
  scaler.observe([load('a', 1000, 0, 1, 1)], []);
  const [w] = scaler.decide(1000, [{ taskId: 'a', executors: 0, policy: { min: 0, max: 3, target: 2 } }]);
  t.is(w!.to, 1);
  t.regex(w!.reason, /scale from zero/);
});

test('idle at min stays at min, and a task below min is brought to it', (t) => {
  const scaler = new Autoscaler({}, fixed(10));
  scaler.observe([load('a', 1000, 0), load('b', 1000, 0)], []);
  const wants = scaler.decide(1000, [
    { taskId: 'a', executors: 1, policy: { min: 1, max: 4, target: 2 } },
    { taskId: 'b', executors: 0, policy: { min: 2, max: 4, target: 2 } },
  ]);
  t.deepEqual(wants.map((w) => w.to), [1, 2]);
});

test('without a capacity figure the default comes from Little\'s law and the policy target', (t) => {
  const scaler = new Autoscaler({}, () => undefined);
  // 10 req/s with 2 in flight: service time 200 ms; target 1 in flight -> 5 req/s per executor -> 2 executors.
  for (let at = 2000; at <= 20_000; at += 2000) scaler.observe([load('a', at, 10, 2)], []);
  const [w] = scaler.decide(20_000, [{ taskId: 'a', executors: 2, policy: { min: 1, max: 8, target: 1 } }]);
  t.is(w!.capacity?.source, 'default');
  t.is(Math.round(w!.capacity!.perExecutorRps), 5);
  t.is(Math.round(scaler.observedServiceTimeMs('a')!), 200);
  t.is(w!.to, 2);
});

test('a task shared by two apps adds up both apps\' demand', (t) => {
  const scaler = new Autoscaler({}, fixed(10));
  scaler.observe([], [app('x', 2000, 10, { shared: 1 }), app('y', 2000, 15, { shared: 2 })]);
  const [w] = scaler.decide(2000, [{ taskId: 'shared', executors: 1, policy: { min: 1, max: 10, target: 2 } }]);
  t.is(Math.round(w!.demandRps), 40);
  t.is(w!.to, 4);
  t.deepEqual(w!.apps, ['x', 'y']);
});

test('a step in an app rate enters panic on the first tick after it, from the latest tick alone', (t) => {
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, fixed(10));
  const counts = new Map([['echo', 1]]);
  // 60 s at 5 req/s, then 24: the first tick after the step still has 4 s of 5 req/s in its 6 s panic window
  // (mean 11.3 req/s, 1.1 executors: below the 2× panic threshold), but its latest tick alone needs 2.4 executors.
  const loads = (now: number) => ({ tasks: [], apps: [app('a', now, now <= 60_000 ? 5 : 24, { echo: 1 })] });
  run(scaler, counts, { min: 1, max: 4, target: 2 }, 2_000, 60_000, loads);
  const first = run(scaler, counts, { min: 1, max: 4, target: 2 }, 62_000, 62_000, loads);
  t.is(counts.get('echo'), 3, JSON.stringify(first));
  t.regex(first[0]!.reason, /panic: .*over the latest tick/);
});

test('on a full pool the devices follow swapped demand on the first tick after the swap', (t) => {
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, fixed(10));
  const counts = new Map([['a', 3], ['b', 1]]);
  const policy = { min: 1, max: 4, target: 2 };
  // a was high (24 req/s on 3 executors), b low (5 on 1); then they swap. a's own decision keeps its 3 executors
  // (load that just stopped keeps its executors a stable window long), but on a pool of 4 its spare capacity is
  // judged by its load now, so b gets the devices at once.
  const loads = (now: number) => {
    const swapped = now > 60_000;
    return { tasks: [], apps: [app('x', now, swapped ? 5 : 24, { a: 1 }), app('y', now, swapped ? 24 : 5, { b: 1 })] };
  };
  run(scaler, counts, policy, 2_000, 60_000, loads);
  scaler.observe(loads(62_000).tasks, loads(62_000).apps);
  const wants = scaler.decide(62_000, [...counts].map(([taskId, executors]) => ({ taskId, executors, policy })));
  t.deepEqual(wants.map((w) => w.to), [3, 3]); // what each wants on its own: together more than the pool
  const grants = planPool(wants.map((w) => ({ taskId: w.taskId, current: w.from, want: w.to, min: policy.min, devicesPerExecutor: 1, demandRps: w.currentDemandRps, perExecutorRps: w.capacity!.perExecutorRps })), 4);
  t.deepEqual(grants.map((g) => [g.taskId, g.to]), [['a', 1], ['b', 3]]);
});

test('without a measured capacity, on a full pool a step seen only in in-flight (the latest rates still the old ones) moves the devices at once', (t) => {
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 });
  const policy = { min: 1, max: 4, target: 2 };
  // a at 24 req/s on 3 executors (5 in flight), b at 5 on 1; then b's requests pile up (30 in flight, 1 executor)
  // while the complete seconds read so far still show the old rates.
  for (let at = 2_000; at <= 60_000; at += 2_000) scaler.observe([load('a', at, 24, 5), load('b', at, 5, at === 60_000 ? 30 : 1)], []);
  const wants = scaler.decide(60_000, [{ taskId: 'a', executors: 3, policy }, { taskId: 'b', executors: 1, policy }]);
  const grants = planPool(wants.map((w) => ({ taskId: w.taskId, current: w.from, want: w.to, min: policy.min, devicesPerExecutor: 1, demandRps: w.currentDemandRps, perExecutorRps: w.capacity!.perExecutorRps })), 4);
  t.deepEqual(grants.map((g) => [g.taskId, g.to]), [['a', 1], ['b', 3]]);
});

test('with a profiled capacity the need is demand ÷ capacity: steady in-flight (invocations waiting on their producers, bursts) adds no executors', (t) => {
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, fixed(5));
  const policy = { min: 1, max: 8, target: 2 };
  // 9 req/s on executors of 5 req/s each → 2 executors, although 40 invocations are in flight (they wait for an LLM
  // call upstream): read at 2 in flight per executor that would be 20.
  for (let at = 2_000; at <= 60_000; at += 2_000) scaler.observe([load('g', at, 9, 40)], []);
  const [w] = scaler.decide(60_000, [{ taskId: 'g', executors: 2, policy }]);
  t.is(w!.to, 2);
  t.false(w!.panic);
  // The same load with no capacity figure: in-flight ÷ target is the signal.
  const plain = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 });
  for (let at = 2_000; at <= 60_000; at += 2_000) plain.observe([load('g', at, 9, 40)], []);
  t.is(plain.decide(60_000, [{ taskId: 'g', executors: 2, policy }])[0]!.to, 8);
});

test('a rise below the panic threshold is followed within the panic window, not a stable window late', (t) => {
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, fixed(10));
  const counts = new Map([['echo', 2]]);
  const policy = { min: 1, max: 4, target: 2 };
  // 60 s at 15 req/s on 2 executors, then 24: 2.4 executors' worth, below the 2× panic threshold (4). The stable
  // window's mean would need more than two minutes to exceed 20 req/s; the 6 s window shows it three ticks after.
  const loads = (now: number) => ({ tasks: [], apps: [app('a', now, now <= 60_000 ? 15 : 24, { echo: 1 })] });
  run(scaler, counts, policy, 2_000, 60_000, loads);
  const after = run(scaler, counts, policy, 62_000, 68_000, loads);
  t.is(counts.get('echo'), 3, JSON.stringify(after));
  t.true(after[0]!.at <= 66_000, JSON.stringify(after));
  t.regex(after[0]!.reason, /^load: .*over 6 s/);
  t.false(/panic/.test(after[0]!.reason));
});

test('with a measured capacity, requests queued at the executors add the executors that drain them within 5 s', (t) => {
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, fixed(10));
  const policy = { min: 1, max: 8, target: 2 };
  // 20 req/s got through to 2 executors of 10 req/s (arrivals read as capacity), while 45 requests wait at the
  // executors past their concurrency: 45 ÷ (10 req/s × 5 s) = 0.9 more executors' worth.
  const queued = (at: number) => ({ ...load('echo', at, 20, 49), queueDepth: 45 });
  for (let at = 2_000; at <= 60_000; at += 2_000) scaler.observe([load('echo', at, 20, 4)], []);
  scaler.observe([queued(62_000)], []);
  const [w] = scaler.decide(62_000, [{ taskId: 'echo', executors: 2, policy }]);
  t.is(w!.to, 3, w!.reason);
  t.regex(w!.reason, /45 queued at the executors/);
  // Without a queue the same arrivals keep 2 (the in-flight count alone adds nothing with a measured capacity).
  const plain = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, fixed(10));
  for (let at = 2_000; at <= 62_000; at += 2_000) plain.observe([load('echo', at, 20, 49)], []);
  t.is(plain.decide(62_000, [{ taskId: 'echo', executors: 2, policy }])[0]!.to, 2);
});

test('an in-flight reading far above every invocation sent drives no decision, and the reason says so', (t) => {
  const scaler = new Autoscaler({}, () => undefined);
  const counts = new Map([['echo', 1]]);
  // Nothing sent for 20 s, yet 1000 reported in flight (a routing weight, not requests).
  const decisions = run(scaler, counts, { min: 1, max: 3, target: 2 }, 2_000, 20_000, (now) => ({ tasks: [load('echo', now, 0, 1000)], apps: [] }));
  t.deepEqual(decisions, []);
  const [w] = scaler.decide(20_000, [{ taskId: 'echo', executors: 1, policy: { min: 1, max: 3, target: 2 } }]);
  t.regex(w!.reason, /1000 more reported than were sent in 60 s: not counted/);
});

test('in flight up to what was sent still counts when no capacity is known', (t) => {
  const scaler = new Autoscaler({}, () => undefined);
  const counts = new Map([['echo', 1]]);
  // 3 req/s for 10 s (30 sent), 12 of them in flight at the target of 2: six executors.
  const decisions = run(scaler, counts, { min: 1, max: 8, target: 2 }, 2_000, 10_000, (now) => ({ tasks: [load('echo', now, 3, 12)], apps: [] }));
  t.is(counts.get('echo'), 6);
  t.true(decisions.length > 0);
});

test('on a full pool a queue building on the executors moves the devices on the first tick after a swap, with a measured capacity too', (t) => {
  const live = (taskId: string) => ({ taskId, perExecutorRps: 10, source: 'live' as const });
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, live);
  const policy = { min: 1, max: 4, target: 2 };
  const held = (taskId: string, at: number, arrivalRps: number, executorInFlight: number, queueDepth: number): TaskLoad => ({ ...load(taskId, at, arrivalRps, executorInFlight), executorInFlight, queueDepth });
  // a at 24 req/s on 3 executors, b at 5 on 1; then they swap. On the first tick after it the rates read are still the
  // old ones, but b's one executor already holds 20 requests (18 queued): 10 executors' worth at 2 in flight each.
  for (let at = 2_000; at <= 60_000; at += 2_000) scaler.observe([held('a', at, 24, 5, 0), held('b', at, 5, 1, 0)], []);
  scaler.observe([held('a', 60_600, 24, 3, 0), held('b', 60_600, 5, 20, 18)], []);
  const wants = scaler.decide(60_600, [{ taskId: 'a', executors: 3, policy }, { taskId: 'b', executors: 1, policy }]);
  const grants = planPool(wants.map((w) => ({ taskId: w.taskId, current: w.from, want: w.to, min: policy.min, devicesPerExecutor: 1, demandRps: w.currentDemandRps, perExecutorRps: w.capacity!.perExecutorRps })), 4);
  t.deepEqual(grants.map((g) => [g.taskId, g.to]), [['a', 1], ['b', 3]]);
  t.regex(wants[1]!.reason, /^panic: .*20 held at the executors ÷ target 2/);
});

test('a queue on the ready executors leads while another executor of the task is still starting', (t) => {
  const live = (taskId: string) => ({ taskId, perExecutorRps: 10, source: 'live' as const });
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, live);
  const policy = { min: 1, max: 4, target: 2 };
  // b was at 5 req/s on one executor; a step began and b got a second executor, still starting. The ready one holds
  // 12 (10 queued): more than the two would hold at their target (4) plus what they serve in half a second (10), but
  // far more than the one that serves holds at its target (2) plus its half second (5).
  for (let at = 500; at <= 60_000; at += 500) scaler.observe([{ ...load('b', at, 5, 1), windowMs: 500, executorInFlight: 1, executorsServing: 1 }], []);
  scaler.observe([{ ...load('b', 60_500, 5, 12), windowMs: 0, executorInFlight: 12, executorsServing: 1, queueDepth: 10 }], []);
  const [w] = scaler.decide(60_500, [{ taskId: 'b', executors: 2, policy }]);
  t.is(w!.to, 4, w!.reason);
  t.regex(w!.reason, /12 held at the executors ÷ target 2/);
});

test('requests the executors hold at their steady level add nothing to a measured capacity\'s need', (t) => {
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, fixed(10));
  const policy = { min: 1, max: 8, target: 2 };
  // 24 req/s on 3 executors of 10 req/s, holding 4.8 between them (2.4 executors' worth, as the rate says): no change.
  const counts = new Map([['echo', 3]]);
  const decisions = run(scaler, counts, policy, 2_000, 60_000, (now) => ({ tasks: [{ ...load('echo', now, 24, 5), executorInFlight: 4.8 }], apps: [] }));
  t.deepEqual(decisions, []);
});

test('a burst held at the executors at a low steady rate moves no devices', (t) => {
  const live = (taskId: string) => ({ taskId, perExecutorRps: 10, source: 'live' as const });
  const scaler = new Autoscaler({ stableWindowMs: 60_000, panicWindowMs: 6_000 }, live);
  const policy = { min: 1, max: 4, target: 2 };
  // 5 req/s on one executor of 10 req/s; for one tick it holds 4 (2 queued past its concurrency): a burst, not a step.
  for (let at = 500; at <= 60_000; at += 500) scaler.observe([{ ...load('b', at, 5, 1), windowMs: 500, executorInFlight: 1 }], []);
  scaler.observe([{ ...load('b', 60_500, 5, 4), windowMs: 500, executorInFlight: 4, queueDepth: 2 }], []);
  const [w] = scaler.decide(60_500, [{ taskId: 'b', executors: 1, policy }]);
  t.is(w!.to, 1, w!.reason);
  t.false(w!.panic);
  t.true(w!.currentDemandRps < 10, `weighs ${w!.currentDemandRps} req/s on a full pool`);
});
