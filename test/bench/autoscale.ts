/**
 * Autoscaling on a fixed device pool (the autoscaler against static splits). Two apps share a 4-device `cornserve up` pool, each
 * calling its own echo task with an exact capacity (serviceTimeMs 200, maxConcurrency 2: 10 req/s per executor).
 * Their demand swaps each 30 s phase: A high / B low, then B high / A low, then A high again (HIGH 24 req/s needs 3
 * executors, with 6 req/s of headroom to work off a queue; LOW 5 needs 1; an even 2+2 split cannot serve HIGH).
 * A 15 s run-in at phase 0's rates comes first and is not counted (see LEAD_S). Three setups run on the same
 * arrival schedule (the bench client's runner; one platform each, started fresh):
 * - autoscaler: `up` as users run it (autoscaling on, default policies min 1 / max pool / target 2, default
 *   60 s stable and 6 s panic windows, 500 ms decisions: the product defaults, not shortened for the benchmark);
 * - even static split: `up --no-autoscale`, 2 + 2 executors;
 * - best static split per phase (an oracle): `up --no-autoscale`, 3 + 1, re-split by hand at each phase
 *   boundary (`/task/scale`, the shrinking app first so its devices are free).
 * Goodput = requests per second that succeed within the SLO (E2EL ≤ 3 × service time), over both apps.
 * Adaptation = time from a swap of demand to the app that went high having 3 ready executors (/tasks/list,
 * polled every 250 ms), measured the same way for the autoscaler and the oracle.
 * BENCH_TIMELINE=1 prints each setup's executors, outstanding requests and decisions as they change (stderr).
 *
 *   node --import tsx test/bench/main.ts --only autoscale
 */
import { loadavg } from 'node:os';
import { GatewayClient, type TaskInfo } from '../../control/gateway/client.js';
import { startRun } from '../../bench/client/runner.js';
import { invokeTarget } from '../../bench/client/senders.js';
import type { RequestRecord } from '../../bench/metrics/record.js';
import { sloOutcome } from '../../bench/metrics/slo.js';
import { arrivalTimesMs } from '../../bench/workload/arrivals.js';
import { RandomSource } from '../../bench/workload/random.js';
import { registerSource, startUp } from './overhead.js';
import { formatTable, type BenchResult } from './types.js';

const SERVICE_MS = 200;
const MAX_CONCURRENCY = 2;
/** req/s: HIGH needs 3 executors of 10 req/s (2.5 in flight each at target 2), LOW needs 1. */
const HIGH = 24;
const LOW = 5;
const PHASE_S = 30;
const PHASES = 3;
/**
 * Before the measured phases every setup serves LEAD_S of phase 0's load, not counted: the measured run starts from
 * each setup's steady state (the oracle and the even split start at their splits; without it the autoscaler alone
 * would pay the platform's own start, 1+1 executors growing to 3+1, inside the goodput of the swaps). The run-in's
 * adaptation is still reported ("start").
 */
const LEAD_S = 15;
const DEVICES = 4;
const NEED_HIGH = 3;
const SLO = { e2el_ms: 3 * SERVICE_MS };
/** Each app's own echo task: equal capacity, different configs so they are two unit tasks (two deployments). */
const APPS = [
  { name: 'bench-as-a', serviceTimeMs: SERVICE_MS, rates: [HIGH, LOW, HIGH] },
  { name: 'bench-as-b', serviceTimeMs: SERVICE_MS + 1, rates: [LOW, HIGH, LOW] },
] as const;

const appSource = (serviceTimeMs: number, name: string) => `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask, echoOutputSchema } from 'cornserve/tasks';
const echo = new EchoTask({ serviceTimeMs: ${serviceTimeMs}, maxConcurrency: ${MAX_CONCURRENCY} });
export default defineApp({
  name: '${name}',
  tasks: { echo },
  request: z.object({ text: z.string() }),
  response: echoOutputSchema,
  async serve(req) { return echo.call({ text: req.text }); },
});
`;

type Setup = 'autoscaler' | 'even' | 'oracle';

/**
 * BENCH_TIMELINE=1 prints, on stderr, every change seen by the poller: each app's executors by state and its
 * autoscaler decisions (time since the load began, and since the last phase boundary), to see where a swap's time goes.
 */
class Timeline {
  private last = new Map<number, string>();
  constructor(private readonly setup: Setup) {}
  sample(atMs: number, tasks: Array<TaskInfo | undefined>): void {
    tasks.forEach((t, i) => {
      if (!t) return;
      const states: Record<string, number> = {};
      for (const e of t.executors) states[e.state] = (states[e.state] ?? 0) + 1;
      const d = t.last_decision;
      const line = `${JSON.stringify(states)} outstanding [${t.executors.map((e) => e.outstanding).join(',')}] desired ${t.desired ?? '-'} demand ${t.demand?.toFixed(1) ?? '-'} cap ${t.capacity ? `${t.capacity.per_executor_rps.toFixed(1)} ${t.capacity.source}` : '-'}` +
        (d ? ` | decision ${d.from}→${d.to}: ${d.reason}` : '');
      if (this.last.get(i) === line) return;
      this.last.set(i, line);
      const p = Math.floor((atMs / 1000 - LEAD_S) / PHASE_S);
      const where = p < 0 ? `run-in +${(atMs / 1000).toFixed(2)} s` : `phase ${p} +${((atMs - phaseStartMs(p)) / 1000).toFixed(2)} s`;
      process.stderr.write(`[timeline ${this.setup}] ${(atMs / 1000).toFixed(2)} s (${where}) ${APPS[i]!.name}: ${line}\n`);
    });
  }
}
interface Sample { atMs: number; ready: number[] }
interface SetupResult { records: RequestRecord[]; samples: Sample[]; adaptS: number[]; startS: number; splits: string }

/** Phase 0's rate for LEAD_S seconds, then the step schedule shifted by LEAD_S (the same for every setup). */
function* withLeadIn(rates: readonly number[], rng: RandomSource): Generator<number, never> {
  const lead = arrivalTimesMs({ rate: rates[0]!, burstiness: 1, pattern: { kind: 'constant' } }, rng.fork('run-in'));
  for (let t = lead.next().value; t < LEAD_S * 1000; t = lead.next().value) yield t;
  const steps = arrivalTimesMs({ rate: rates[0]!, burstiness: 1, pattern: { kind: 'step', rates: [...rates], periodS: PHASE_S } }, rng.fork('arrivals'));
  for (;;) yield steps.next().value + LEAD_S * 1000;
}
/** ms since the load began at which measured phase p begins. */
const phaseStartMs = (p: number) => (LEAD_S + p * PHASE_S) * 1000;

const readyOf = (t: TaskInfo | undefined) => t?.executors.filter((e) => e.state === 'ready').length ?? 0;
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runSetup(setup: Setup): Promise<SetupResult> {
  const up = await startUp({}, DEVICES, setup === 'autoscaler' ? [] : ['--no-autoscale']);
  try {
    for (const a of APPS) await registerSource(up.url, appSource(a.serviceTimeMs, a.name), a.name);
    const client = new GatewayClient(up.url, 'bench', 30_000);
    const taskIds = async () => {
      const tasks = await client.tasks();
      return APPS.map((a) => tasks.find((t) => t.name === `echo-${a.serviceTimeMs}ms-x${MAX_CONCURRENCY}`)!.task_id);
    };
    const ids = await taskIds();
    const scaleTo = async (i: number, executors: number) => {
      const now = readyOf((await client.tasks()).find((t) => t.task_id === ids[i]));
      if (executors !== now) await client.scale(ids[i]!, executors - now);
    };
    // Even split before the load; the oracle starts at phase 0's best split.
    if (setup === 'even') { await scaleTo(0, 2); await scaleTo(1, 2); }
    if (setup === 'oracle') await scaleTo(0, NEED_HIGH);

    const samples: Sample[] = [];
    const timeline = process.env.BENCH_TIMELINE ? new Timeline(setup) : undefined;
    const t0 = performance.now();
    if (process.env.BENCH_TIMELINE) process.stderr.write(`[timeline ${setup}] load begins at ${new Date().toISOString()}\n`);
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const tasks = await client.tasks().catch(() => undefined);
        if (tasks) {
          const atMs = performance.now() - t0;
          samples.push({ atMs, ready: ids.map((id) => readyOf(tasks.find((t) => t.task_id === id))) });
          if (timeline) timeline.sample(atMs, ids.map((id) => tasks.find((t) => t.task_id === id)));
        }
        await delay(250);
      }
    })();
    const oracle = setup !== 'oracle' ? Promise.resolve() : (async () => {
      for (let p = 1; p < PHASES; p++) {
        await delay(t0 + phaseStartMs(p) - performance.now());
        const high = APPS.findIndex((a) => a.rates[p] === HIGH);
        await scaleTo(1 - high, 1); // free the devices first
        await scaleTo(high, NEED_HIGH);
      }
    })();
    const runs = APPS.map((a, i) => startRun({
      target: invokeTarget(up.url, a.name, 15_000),
      arrivals: withLeadIn(a.rates, new RandomSource(11 + i)),
      request: (index) => ({ index, kind: 'text', body: { text: 'x' }, inputTokens: 0 }),
      limit: { durationMs: phaseStartMs(PHASES) },
      requestTimeoutMs: 20_000,
      drainTimeoutMs: 20_000,
    }));
    const done = await Promise.all(runs.map((r) => r.done));
    await oracle;
    polling = false;
    await poller;
    // A swap at phase p is adapted once the app that went high has NEED_HIGH ready executors (the same poll for every setup).
    const adaptedAfter = (fromMs: number, toMs: number, high: number) => {
      const at = samples.find((s) => s.atMs >= fromMs && s.atMs < toMs && s.ready[high]! >= NEED_HIGH);
      return at ? (at.atMs - fromMs) / 1000 : NaN;
    };
    const highIn = (p: number) => APPS.findIndex((a) => a.rates[p] === HIGH);
    const adaptS = Array.from({ length: PHASES }, (_, p) => adaptedAfter(phaseStartMs(p), phaseStartMs(p + 1), highIn(p)));
    const startS = adaptedAfter(0, phaseStartMs(1), highIn(0));
    const splitAt = (ms: number) => [...samples].reverse().find((s) => s.atMs <= ms)?.ready.join('+') ?? '?';
    const splits = Array.from({ length: PHASES }, (_, p) => splitAt(phaseStartMs(p + 1) - 500)).join(', ');
    // Only the measured phases count: requests scheduled during the run-in are left out.
    const records = done.flatMap((d) => d.records).filter((r) => r.scheduledMs >= LEAD_S * 1000);
    return { records, samples, adaptS, startS, splits };
  } finally {
    await up.stop();
  }
}

export async function run(): Promise<BenchResult[]> {
  const load0 = loadavg()[0]!;
  const r = { autoscaler: await runSetup('autoscaler'), even: await runSetup('even'), oracle: await runSetup('oracle') };
  const durationS = PHASES * PHASE_S;
  const g = (s: SetupResult) => sloOutcome(s.records, SLO, durationS);
  const [ga, ge, go] = [g(r.autoscaler), g(r.even), g(r.oracle)];
  const fmtS = (xs: number[]) => xs.map((x) => (Number.isNaN(x) ? 'never' : `${x.toFixed(1)} s`)).join(' / ');
  const conditions = `2 apps × echo ${SERVICE_MS} ms × ${MAX_CONCURRENCY} (10 req/s per executor), ${DEVICES} devices, ${PHASES} phases of ${PHASE_S} s at ${HIGH}/${LOW} req/s swapped, Poisson, after a ${LEAD_S} s run-in at phase 0's rates (not counted); SLO E2EL ≤ ${SLO.e2el_ms} ms; default windows (60 s stable, 6 s panic); load average ${load0.toFixed(1)} → ${loadavg()[0]!.toFixed(1)} (2 cores, shared)`;
  const describe = (name: string, s: SetupResult, o: ReturnType<typeof g>) =>
    `${name}: ${o.good}/${s.records.length} good, ${s.records.filter((x) => !x.ok).length} failed, ready executors A+B at each phase end ${s.splits}`;
  const notes = `${describe('autoscaler', r.autoscaler, ga)}; ${describe('even', r.even, ge)}; ${describe('oracle', r.oracle, go)}; ${conditions}`;
  return [
    {
      name: 'autoscale: goodput vs even static split', figure: ga.goodput, unit: 'req/s', baseline: ge.goodput,
      baselineName: 'even static split 2+2', ratio: ga.goodput / ge.goodput, target: '≥ 1.5', notes: `ratio = autoscaler / even (higher is better); ${notes}`,
    },
    {
      name: 'autoscale: goodput vs best static split per phase', figure: ga.goodput, unit: 'req/s', baseline: go.goodput,
      baselineName: 'oracle 3+1, re-split at each swap', ratio: ga.goodput / go.goodput, target: '≥ 0.95', notes: 'ratio = autoscaler / oracle (higher is better)',
    },
    {
      name: 'autoscale: adaptation, swap → 3 ready executors (worst swap)', figure: Math.max(...r.autoscaler.adaptS.slice(1)), unit: 's',
      baseline: Math.max(...r.oracle.adaptS.slice(1)), baselineName: 'oracle re-split by hand', ratio: Math.max(...r.autoscaler.adaptS.slice(1)) / Math.max(...r.oracle.adaptS.slice(1)), target: '≤ 2.5 s',
      notes: `per swap (phase 0 — already adapted in the run-in, swap 1, swap 2): autoscaler ${fmtS(r.autoscaler.adaptS)}, oracle ${fmtS(r.oracle.adaptS)}; platform start (run-in, 1+1 → 3+1): autoscaler ${fmtS([r.autoscaler.startS])}; NaN/never = not reached within the phase's run; ratio = autoscaler / oracle (lower is better)`,
    },
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatTable(await run()));
  process.exit(0);
}
