/**
 * The disaggregation experiment's live cross-check (the simulator's verdict checked on real executors): one small configuration on the live local
 * platform with our tiny models — 4 devices, monolithic (4 LLM executors with the vision encoder inside,
 * experiment/apps/mllm-image-monolithic.ts) vs disaggregated (1 Eric + 3 LLM executors, embeddings through the
 * sidecar, experiment/apps/mllm-image.ts) — driven by the bench client's own code with the same seeded workload
 * at a few rates, and the simulator on the same scenario with the preset fitted on this machine (local-cpu).
 * Output: per rate and system, SLO attainment and p99 E2EL, live and simulated, and split ÷ monolithic in each.
 */
import { readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { GatewayClient } from '../control/gateway/client.js';
import type { Io } from '../lib/io.js';
import { launchUp } from '../control/compose/launch-up.js';
import { benchCommand } from '../bench/client/command.js';
import type { RunResults } from '../bench/report/results.js';
import { parseScenario } from '../sim/scenario/schema.js';
import { simulate } from '../sim/run.js';
import { demandFor } from '../plan/make.js';
import { scenarioFor } from '../plan/goodput.js';
import { monolithicCandidate, type Candidate } from '../plan/search.js';

export const SPLIT_APP = 'experiment/apps/mllm-image.ts';
export const MONOLITHIC_APP = 'experiment/apps/mllm-image-monolithic.ts';
/** The repository root: `cornserve up` and the app files are found from it, wherever the command runs. */
const REPO = new URL('../', import.meta.url);
const LLM_LABEL = 'llm:cornserve/tiny-vlm-a';
const ENCODER_LABEL = 'encoder:image';

export interface CrosscheckOptions {
  rates: number[];
  /** Requests per rate and system. */
  numRequests: number;
  devices: number;
  /** Executors of the split: the rest of the devices go to the LLM. */
  splitEncoders: number;
  mix: string;
  inputLen: number;
  outputLen: number;
  imageSize: string;
  slo: string;
  seed: number;
  /** Gateway port of the `cornserve up` it starts (default: a free one). */
  port?: number;
  resultDir: string;
  /** Skip the live platform (the simulator only). */
  simOnly?: boolean;
}

export const DEFAULT_CROSSCHECK: CrosscheckOptions = {
  rates: [2, 4, 8], numRequests: 40, devices: 4, splitEncoders: 1, mix: 'text:0.3,image:0.7',
  inputLen: 64, outputLen: 16, imageSize: '224x224', slo: 'ttft_ms=1000,e2el_ms=3000', seed: 7, resultDir: 'experiment-results/live-crosscheck',
};

export interface Point { rate: number; completed: number; failed: number; attainment: number | null; p99_e2el_ms: number | null; throughput: number }
export type System = 'monolithic' | 'disaggregated';
export interface CrosscheckResult {
  conditions: Record<string, unknown>;
  replicas: Record<System, Record<string, number>>;
  live: Record<System, Point[]> | null;
  /** Executors per task class the live platform ran (from /tasks/list after deploying). */
  live_executors: Record<System, Record<string, number>> | null;
  simulated: Record<System, Point[]>;
}

function point(rate: number, r: RunResults): Point {
  return {
    rate, completed: r.completed as number, failed: (r.failed as number | undefined) ?? 0,
    attainment: (r.slo_attainment as number | null) ?? null, p99_e2el_ms: (r.p99_e2el_ms as number | null) ?? null, throughput: r.request_throughput as number,
  };
}

export function replicasFor(o: Pick<CrosscheckOptions, 'devices' | 'splitEncoders'>): Record<System, Record<string, number>> {
  return {
    monolithic: { [ENCODER_LABEL]: 0, [LLM_LABEL]: o.devices },
    disaggregated: { [ENCODER_LABEL]: o.splitEncoders, [LLM_LABEL]: o.devices - o.splitEncoders },
  };
}

/** `cornserve up` as its own process, as a user runs it (no autoscaling: the counts are the experiment's). */
async function startUp(o: CrosscheckOptions, token: string, log: (l: string) => void): Promise<{ url: string; stop: () => Promise<void> }> {
  const up = await launchUp({
    args: ['--devices', String(o.devices), '--no-autoscale'],
    ...(o.port !== undefined ? { port: o.port } : {}),
    env: { CORNSERVE_ADMIN_TOKEN: token },
    readyTimeoutMs: 120_000,
  });
  log(`  cornserve up on port ${up.port} (pid ${up.pid}, ${o.devices} devices)`);
  return { url: up.url, stop: async () => { await up.stop(); } };
}

/** Registers the system's app and scales its tasks to the experiment's executor counts. */
async function deploy(client: GatewayClient, system: System, o: CrosscheckOptions, log: (l: string) => void): Promise<{ model: string; executors: Record<string, number> }> {
  const file = system === 'monolithic' ? MONOLITHIC_APP : SPLIT_APP;
  const final = await client.register(await readFile(new URL(file, REPO), 'utf8'), {});
  if ((final as { type?: string }).type !== 'final') throw new Error(`registering ${file} failed: ${JSON.stringify(final)}`);
  const want = replicasFor(o)[system];
  for (const t of await client.tasks()) {
    const n = /encoder/i.test(t.task_class) ? want[ENCODER_LABEL]! : want[LLM_LABEL]!;
    const delta = n - t.devices.length;
    if (delta !== 0) await client.scale(t.task_id, delta);
  }
  const tasks = await client.tasks();
  log(`  ${system}: ${tasks.map((t) => `${t.executors.length} × ${t.task_class}`).join(', ')}`);
  const executors = Object.fromEntries(tasks.map((t) => [t.task_class, t.executors.length]));
  return { model: system === 'monolithic' ? 'mllm-image-monolithic' : 'mllm-image', executors };
}

async function liveSystem(system: System, o: CrosscheckOptions, io: Io): Promise<{ points: Point[]; executors: Record<string, number> }> {
  const token = randomBytes(12).toString('hex');
  io.err(`live ${system}: starting the platform`);
  const up = await startUp(o, token, io.err);
  try {
    const client = new GatewayClient(up.url, token, 300_000);
    const { model, executors } = await deploy(client, system, o, io.err);
    const raw = (rate: number | 'inf', n: number, dir: string) => ({
      api: 'chat', model, requestRate: String(rate), burstiness: '1', numRequests: String(n), pattern: 'constant', seed: String(o.seed),
      mix: o.mix, inputLen: String(o.inputLen), outputLen: String(o.outputLen), rangeRatio: '0', imageSize: o.imageSize, audioSeconds: '2',
      videoFrames: '4', slo: o.slo, soakSampleS: '5', resultDir: dir, requestTimeout: '120', drainTimeout: '30', plots: false,
    });
    const quiet: Io = { out: () => {}, err: (l) => (/^\s*(bench:|\[)/.test(l) ? io.err(`    ${l.trim()}`) : undefined) };
    // warm-up (not measured): the first requests of every executor pay one-time costs
    await benchCommand(raw(o.devices, o.devices * 2, `${o.resultDir}/live-${system}-warmup`), up.url, { out: () => {}, err: () => {} });
    const points: Point[] = [];
    for (const rate of o.rates) {
      const { results } = await benchCommand(raw(rate, o.numRequests, `${o.resultDir}/live-${system}-rate-${rate}`), up.url, quiet);
      const p = point(rate, results as RunResults);
      points.push(p);
      io.err(`  live ${system} @ ${rate} req/s: ${p.completed}/${o.numRequests} done, attainment ${fmtPct(p.attainment)}, p99 E2EL ${fmt(p.p99_e2el_ms, 0)} ms`);
    }
    return { points, executors };
  } finally {
    io.err(`live ${system}: stopping the platform`);
    await up.stop();
  }
}

async function simulated(o: CrosscheckOptions, io: Io): Promise<Record<System, Point[]>> {
  const sc = await parseScenario({
    name: 'mllm-image', cluster: { nodes: 1, devicesPerNode: o.devices, device: 'local-cpu', intraNode: 'local', interNode: 'local' },
    app: { file: SPLIT_APP, api: 'chat' },
    workload: { requestRate: o.rates[0], numRequests: o.numRequests, mix: o.mix, inputLen: o.inputLen, outputLen: o.outputLen, imageSize: o.imageSize, seed: o.seed },
    slo: o.slo,
  });
  io.err(sc.cluster.cores !== undefined
    ? `  executors and hops share ${sc.cluster.cores} cores (processor sharing); hops per request ${sc.overheadMs.toFixed(1)} ms, per invocation ${sc.invocationOverheadMs.toFixed(1)} ms (measured by cornserve simulate fit)`
    : '  every executor a device of its own (the preset has no host block)');
  const { demand } = await demandFor(sc);
  const mono = monolithicCandidate(demand.stages, o.devices);
  if (!mono) throw new Error(`${o.devices} devices cannot hold a monolithic replica`);
  const candidates: Record<System, Candidate> = { monolithic: mono, disaggregated: { mode: 'split', replicas: replicasFor(o).disaggregated } };
  const out = {} as Record<System, Point[]>;
  for (const system of ['monolithic', 'disaggregated'] as const) {
    out[system] = [];
    for (const rate of o.rates) {
      const r = await simulate(scenarioFor(sc, candidates[system], rate), { itl: false });
      out[system].push(point(rate, r.results));
    }
    io.err(`  simulated ${system}: ${out[system].map((p) => `${p.rate} req/s → ${fmtPct(p.attainment)}, p99 ${fmt(p.p99_e2el_ms, 0)} ms`).join('; ')}`);
  }
  return out;
}

const fmt = (v: number | null | undefined, d = 2) => (v === null || v === undefined || !Number.isFinite(v) ? '—' : v.toFixed(d));
const fmtPct = (v: number | null) => (v === null ? '—' : `${(v * 100).toFixed(0)}%`);
/** split ÷ monolithic (attainment: higher is better; p99: lower is better). */
const ratio = (a: number | null, b: number | null) => (a === null || b === null || b === 0 ? null : a / b);

export async function liveCrosscheck(o: CrosscheckOptions, io: Io): Promise<CrosscheckResult> {
  const replicas = replicasFor(o);
  let live: CrosscheckResult['live'] = null;
  let executors: CrosscheckResult['live_executors'] = null;
  if (!o.simOnly) {
    const m = await liveSystem('monolithic', o, io);
    const d = await liveSystem('disaggregated', o, io);
    live = { monolithic: m.points, disaggregated: d.points };
    executors = { monolithic: m.executors, disaggregated: d.executors };
  }
  io.err('simulator: the same scenario, preset local-cpu');
  const sim = await simulated(o, io);
  return {
    conditions: { ...o, apps: { monolithic: MONOLITHIC_APP, disaggregated: SPLIT_APP }, device_preset: 'local-cpu (sim/presets/local-cpu.yaml)' },
    replicas, live, live_executors: executors, simulated: sim,
  };
}

/** The table: per rate, attainment and p99 E2EL of both systems, live and simulated, and split ÷ monolithic. */
export function crosscheckTable(r: CrosscheckResult): string {
  const rows: string[] = [
    '| rate (req/s) | where | monolithic attainment | split attainment | split ÷ mono (attainment) | monolithic p99 E2EL (ms) | split p99 E2EL (ms) | split ÷ mono (p99 E2EL) |',
    '|---|---|---|---|---|---|---|---|',
  ];
  const sources: Array<[string, Record<System, Point[]> | null]> = [['live', r.live], ['simulated', r.simulated]];
  for (let i = 0; i < r.simulated.monolithic.length; i++) {
    for (const [where, s] of sources) {
      if (!s) continue;
      const m = s.monolithic[i]!;
      const d = s.disaggregated[i]!;
      rows.push(`| ${m.rate} | ${where} | ${fmtPct(m.attainment)} | ${fmtPct(d.attainment)} | ${fmt(ratio(d.attainment, m.attainment))} | ${fmt(m.p99_e2el_ms, 0)} | ${fmt(d.p99_e2el_ms, 0)} | ${fmt(ratio(d.p99_e2el_ms, m.p99_e2el_ms))} |`);
    }
  }
  return rows.join('\n');
}

export interface Agreement { rate: number; live_ratio: number | null; simulated_ratio: number | null; compared: boolean; agrees: boolean | null }

/**
 * Does the live platform agree with the simulator on which system has the lower p99 E2EL? Compared only at the
 * rates where both differ by at least `factor` (split ÷ monolithic ≥ factor or ≤ 1/factor): smaller differences
 * are within the noise of a few dozen requests on a shared machine.
 */
export function p99Agreement(r: CrosscheckResult, factor = 1.5): Agreement[] {
  if (!r.live) return [];
  const live = r.live;
  return r.simulated.monolithic.map((m, i) => {
    const sim = ratio(r.simulated.disaggregated[i]!.p99_e2el_ms, m.p99_e2el_ms);
    const liv = ratio(live.disaggregated[i]!.p99_e2el_ms, live.monolithic[i]!.p99_e2el_ms);
    const side = (x: number | null) => (x === null ? 0 : x >= factor ? 1 : x <= 1 / factor ? -1 : 0);
    const compared = side(sim) !== 0 && side(liv) !== 0;
    return { rate: m.rate, live_ratio: liv, simulated_ratio: sim, compared, agrees: compared ? side(sim) === side(liv) : null };
  });
}

export function agreementText(a: Agreement[], factor = 1.5): string {
  if (!a.length) return 'direction: no live run';
  return `direction of split ÷ monolithic p99 E2EL (compared where both are ≥ ${factor}× apart): ${a
    .map((x) => `${x.rate} req/s ${x.compared ? (x.agrees ? 'agrees' : 'DISAGREES') : 'not compared'} (live ${fmt(x.live_ratio)}, simulated ${fmt(x.simulated_ratio)})`)
    .join('; ')}`;
}
