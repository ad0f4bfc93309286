/**
 * One simulated run: record the app's graphs, place the executors with the live allocation policy, send the
 * bench client's arrivals and request mix, route every invocation with the live dispatcher's pick, and let
 * the simulated executors (which batch with the live schedulers) serve them in virtual time. The outcome is
 * the bench client's records → results (same keys as `cornserve bench`), plus counters of the invariants.
 */
import { allocate, buildInventory, type Inventory } from '../policies/allocation.js';
import { pickLeastOutstanding } from '../policies/pick.js';
import type { RequestRecord } from '../bench/metrics/record.js';
import { runResults, type RunResults, type RunSettings } from '../bench/report/results.js';
import { StreamingAggregate } from '../bench/metrics/stream.js';
import { InFlightPeaks } from '../bench/metrics/timeline.js';
import { arrivalTimesMs, patternText } from '../bench/workload/arrivals.js';
import { nextSpec, type RequestKind, type RequestSpec } from '../bench/workload/mix.js';
import { RandomSource } from '../bench/workload/random.js';
import { chatRequestFor } from '../bench/workload/requests.js';
import { LINK_PRESETS, transferMs } from './cluster/links.js';
import { EventQueue } from './engine/queue.js';
import { loadApp, recordGraphs, ScenarioError, simGraph, type SimGraph, type SimTask } from './apps/record.js';
import { SimEcho } from './executors/echo.js';
import { SimEncoder } from './executors/encoder.js';
import { SimGenerator } from './executors/generator.js';
import { SimLlm } from './executors/llm.js';
import type { SimExecutor, SimJob } from './executors/types.js';
import { IndependentDevice, SharedCores, type Compute } from './engine/compute.js';
import { llmTokensOf, type StageModels } from './latency/models.js';
import type { Scenario } from './scenario/schema.js';
import { modelsAtTp } from './latency/tensor-parallel.js';
import { SimAutoscaling, type Pool, type ScaleEvent } from './autoscale.js';
import type { DeviceRef } from '../lib/store.js';
import { tilesOf } from './memory/specs.js';
import { checkEncoderFits, checkGeneratorFits, encoderLoad, largestRequest, llmKvTokens } from './memory/fit.js';

export interface Invariants {
  /** Executors that ever ran more batches at once than their capacity. */
  overCapacity: number;
  /** Invocations that started before one of their producers finished. */
  startedBeforeProducers: number;
  /** Requests that ended more than once, and requests that never ended. */
  endedTwice: number;
  neverEnded: number;
}

export interface SimOutcome {
  results: RunResults;
  invariants: Invariants;
  /** Task labels and their executor counts. */
  deployment: Array<{ label: string; taskId: string; stage: string; executors: number; nodes: number[] }>;
  /** autoscaler mode: every executor-count change, in order. */
  scaling: ScaleEvent[];
  events: number;
  requests: number;
  /** Wall-clock ms the event loop took. */
  wallMs: number;
  /** Why the run stopped before its end (Ctrl-C, or an error inside the simulation): the results are partial. */
  stoppedBy?: string;
  /** Per LLM task label: KV-cache tokens per executor, the most blocks any executor held of its total, preemptions in all. */
  memory?: Record<string, { kvTokens: number; totalBlocks: number; maxBlocksUsed: number; preemptions: number }>;
}

export interface SimOptions {
  /** Keep each request's inter-token gaps (ITL metrics); off saves memory on long runs. @default true */
  itl?: boolean;
  /** Per-request records kept in results.json (the first N by index); the aggregates always cover every request
   *  (HDR histograms and running sums, bench/metrics/stream.ts), so memory stays bounded on long runs. @default 100000 */
  keepRecords?: number;
  /** Each request's record as it ends (the command appends it to requests.jsonl). */
  onRecord?: (record: RequestRecord) => void;
  /** Aborted → the run stops at the next slice of events and returns partial results. */
  signal?: AbortSignal;
  /** Called about every PROGRESS_EVERY_S simulated seconds. */
  onProgress?: (simulatedS: number, requests: number) => void;
}

/** Events run between two turns of the Node event loop (where Ctrl-C and the file writes get their turn). */
const EVENTS_PER_SLICE = 200_000;
const PROGRESS_EVERY_S = 60;

export const DEFAULT_KEEP_RECORDS = 100_000;

function need<K extends keyof StageModels>(models: StageModels, stage: K, label: string): NonNullable<StageModels[K]> {
  const m = models[stage];
  if (!m) throw new ScenarioError(`models.${stage}: the device preset has no ${stage} model, which task ${label} needs`);
  return m as NonNullable<StageModels[K]>;
}

export function makeExecutor(task: SimTask, id: string, node: number, events: EventQueue, models: StageModels, compute: Compute): SimExecutor {
  const c = task.config;
  switch (task.stage) {
    case 'echo': return new SimEcho(id, node, events, compute, c, need(models, 'echo', task.label));
    case 'encoder': {
      const m = need(models, 'encoder', task.label);
      return new SimEncoder(id, node, events, compute, String(c.modality), (c.maxBatchSize as number | undefined) ?? m.maxBatchSize, m);
    }
    case 'llm': return new SimLlm(id, node, events, compute, need(models, 'llm', task.label), models.encoder);
    case 'generator': return new SimGenerator(id, node, events, compute, String(c.modality ?? 'image'), need(models, 'generator', task.label), models.encoder);
  }
}

/**
 * Where each node's work runs: with `cluster.cores`, one set of shared cores per node that the node's executors
 * and the platform's own per-request work (the hops) all run on; else every executor is a device of its own.
 */
export function nodeCompute(sc: Scenario, events: EventQueue): { of(node: number): Compute; shared: SharedCores[] } {
  const cores = sc.cluster.cores;
  if (cores === undefined) {
    const device = new IndependentDevice(events);
    return { of: () => device, shared: [] };
  }
  const shared = Array.from({ length: sc.cluster.nodes }, () => new SharedCores(events, cores));
  return { of: (node) => shared[node]!, shared };
}

/** Encoder units of a request: image patches, video frames × patches, audio units. */
export function unitsOf(spec: RequestSpec, models: StageModels): number {
  const m = models.encoder;
  if (!m) return 0;
  const patches = (w: number, h: number) => (m.tile ? tilesOf(w, h, m.tile) * (m.tile.size / m.patchSize) ** 2 : Math.ceil(w / m.patchSize) * Math.ceil(h / m.patchSize));
  if (spec.image) return patches(spec.image.width, spec.image.height);
  if (spec.video) return spec.video.frames * patches(spec.video.width, spec.video.height);
  if (spec.audioSeconds !== undefined) return Math.ceil(spec.audioSeconds * m.audioUnitsPerSecond);
  return 0;
}

export async function recordApp(sc: Scenario, tasks: Map<string, SimTask>): Promise<Map<RequestKind, SimGraph[]>> {
  const app = await loadApp(sc.app.file, 'app.file');
  const byKind = new Map<RequestKind, SimGraph[]>();
  for (const { kind } of sc.workload.mix.mix) {
    let body: unknown;
    if (sc.app.api === 'invoke') {
      if (!sc.app.request) throw new ScenarioError('app.request: an invoke app needs its request_data here');
      body = sc.app.request;
    } else {
      const small = { width: 32, height: 32 }; // the graph's shape does not depend on the media's size
      const spec: RequestSpec = { index: 0, kind, inputTokens: 8, outputTokens: 2, mediaSeed: 0, ...(kind === 'image' ? { image: small } : {}), ...(kind === 'audio' ? { audioSeconds: 0.1 } : {}), ...(kind === 'video' ? { video: { frames: 2, ...small } } : {}) };
      body = { ...chatRequestFor(spec, app.name).body, ...(sc.app.request ?? {}) };
    }
    byKind.set(kind, (await recordGraphs(app, body, `app (${kind} request)`)).map((g) => simGraph(g, tasks)));
  }
  return byKind;
}

/**
 * The models one executor of a task runs with on `tp` × its task's devices: the tensor-parallel latency factors
 * and, with memory on, the KV cache its devices leave (less its encoder's share when the encoder runs inside it).
 * Refused before the run when the component does not fit or the workload's largest request exceeds the cache.
 */
export function executorModelsFor(sc: Scenario, inlineEncoder: boolean): (t: SimTask, tp: number) => StageModels {
  const mem = sc.memory;
  const w = sc.workload.mix;
  const largest = mem ? largestRequest(w.mix.map((m) => m.kind), w, sc.models, (spec) => unitsOf(spec, sc.models)) : undefined;
  return (t, tp) => {
    const models = modelsAtTp(sc.models, t.stage, tp);
    if (!mem || !largest) return models;
    const devices = tp * t.devicesPerExecutor;
    if (t.stage === 'encoder' && models.encoder) checkEncoderFits(mem, t.label, devices, encoderLoad(models.encoder.maxBatchSize ?? 1, largest.units));
    if (t.stage === 'generator') checkGeneratorFits(mem, t.label, devices);
    if (t.stage !== 'llm' || !models.llm) return models;
    const llm = models.llm;
    // Inside the LLM the encoder's peak is the images of one full prefill (vLLM profiles the encoder at its token budget).
    const perItem = llmTokensOf(models.encoder, largest.units);
    const colocated = inlineEncoder && largest.units > 0 ? encoderLoad(Math.min(llm.maxBatch, Math.floor(llm.maxPrefillTokens / Math.max(1, perItem))), largest.units) : undefined;
    return { ...models, llm: { ...llm, kvTokens: llmKvTokens(mem, t.label, llm, devices, largest, colocated) } };
  };
}

function deploy(sc: Scenario, tasks: Map<string, SimTask>, events: EventQueue, computeOf: (node: number) => Compute): { executors: Map<string, SimExecutor[]>; pool: Pool; modelsOf: (t: SimTask) => StageModels } {
  const labels = new Map([...tasks.values()].map((t) => [t.label, t]));
  const from = sc.deployment.planSource;
  for (const label of Object.keys(sc.deployment.replicas)) {
    if (!labels.has(label)) throw new ScenarioError(`${from ? `${from}: component '${label}'` : `deployment.replicas.${label}`}: the app has no such task (its tasks: ${[...labels.keys()].join(', ')})`);
  }
  if (from) {
    const missing = [...labels.keys()].filter((l) => !(l in sc.deployment.replicas));
    if (missing.length) throw new ScenarioError(`${from}: the plan has no component for the app's task(s) ${missing.join(', ')}`);
  }
  // A plan's placement: the nodes its executors go on, label by label, in the plan's order.
  const planNodes = new Map<string, number[]>();
  for (const p of sc.deployment.placement ?? []) planNodes.set(p.label, [...(planNodes.get(p.label) ?? []), ...Array<number>(p.executors).fill(p.node)]);
  const devicesPer = (t: SimTask) => sc.deployment.devicesPerExecutor?.[t.label] ?? t.devicesPerExecutor;
  const nodes = Array.from({ length: sc.cluster.nodes }, (_, i) => ({ node: `node-${i}`, devices: sc.cluster.devicesPerNode }));
  let inv: Inventory = buildInventory(nodes);
  const executors = new Map<string, SimExecutor[]>();
  const monolithic = sc.deployment.mode === 'monolithic';
  const inlined = (t: SimTask) => t.stage === 'encoder' && (monolithic || sc.deployment.replicas[t.label] === 0);
  for (const t of tasks.values()) {
    if (!inlined(t)) {
      if (sc.deployment.replicas[t.label] === 0) throw new ScenarioError(`deployment.replicas.${t.label}: only an encoder may have 0 executors (it then runs inside its consumer)`);
      continue;
    }
    executors.set(t.taskId, []);
    if (![...tasks.values()].some((c) => c.stage === 'llm' || c.stage === 'generator')) throw new ScenarioError(`deployment: encoder ${t.label} runs inside its consumer, which needs an LLM or generator task`);
  }
  const atTp = executorModelsFor(sc, [...tasks.values()].some(inlined));
  const modelsOf = (t: SimTask) => atTp(t, devicesPer(t) / t.devicesPerExecutor);
  const auto = sc.deployment.autoscaler;
  const wanted = [...tasks.values()].filter((t) => !inlined(t)).map((t) => ({ t, n: auto ? (sc.deployment.replicas[t.label] ?? (auto.policies[t.label] ?? auto.policy).min) : sc.deployment.replicas[t.label] ?? sc.deployment.default }));
  const held = new Map<SimExecutor, DeviceRef[]>();
  const total = wanted.reduce((a, w) => a + w.n * devicesPer(w.t), 0);
  for (const { t, n } of wanted) {
    const list: SimExecutor[] = [];
    for (let i = 0; i < n; i++) {
      try {
        const node = planNodes.get(t.label)?.[i];
        // Placed by the plan: the live allocation on that node alone; otherwise on the whole cluster.
        const a = node === undefined ? allocate(inv, devicesPer(t), t.taskId) : allocate([inv[node]!], devicesPer(t), t.taskId);
        inv = node === undefined ? a.inventory : inv.map((x, k) => (k === node ? a.inventory[0]! : x));
        const at = Number(a.devices[0]!.node.slice('node-'.length));
        const ex = makeExecutor(t, `${t.label}#${i}`, at, events, modelsOf(t), computeOf(at));
        held.set(ex, a.devices);
        list.push(ex);
      } catch (e) {
        if (e instanceof ScenarioError) throw e;
        throw new ScenarioError(`${from ? `${from}: ` : ''}cluster: ${sc.cluster.nodes} × ${sc.cluster.devicesPerNode} devices cannot hold the deployment (${total} devices for ${wanted.map((w) => `${w.n} × ${w.t.label}`).join(', ')}): ${(e as Error).message}`);
      }
    }
    executors.set(t.taskId, list);
  }
  return { executors, pool: { inventory: inv, devices: sc.cluster.nodes * sc.cluster.devicesPerNode, held }, modelsOf };
}

export async function simulate(sc: Scenario, o: SimOptions = {}): Promise<SimOutcome> {
  const itl = o.itl ?? true;
  const keep = o.keepRecords ?? DEFAULT_KEEP_RECORDS;
  const stream = new StreamingAggregate(sc.workload.slo);
  const events = new EventQueue();
  const tasks = new Map<string, SimTask>();
  const byKind = await recordApp(sc, tasks);
  const compute = nodeCompute(sc, events);
  const { executors, pool, modelsOf } = deploy(sc, tasks, events, compute.of);
  const everyExecutor = [...executors.values()].flat();
  const autoscaling = sc.deployment.autoscaler
    ? new SimAutoscaling(
      events,
      [...tasks.values()].filter((t) => executors.get(t.taskId)!.length > 0),
      executors,
      pool,
      (t, id, node) => makeExecutor(t, id, node, events, modelsOf(t), compute.of(node)),
      sc.deployment.autoscaler,
      { appId: sc.name, invocationsPerRequest: invocationsPerRequest(byKind, sc) },
      everyExecutor,
    )
    : undefined;
  const intra = LINK_PRESETS[sc.cluster.intraNode]!;
  const inter = LINK_PRESETS[sc.cluster.interNode]!;
  const models = sc.models;
  const turns = new Map<string, number>();
  const records: RequestRecord[] = [];
  const invariants: Invariants = { overCapacity: 0, startedBeforeProducers: 0, endedTwice: 0, neverEnded: 0 };
  let jobIds = 0;
  let ended = 0;
  // The whole run's in-flight timeline (bounded peaks per bucket): the kept records cover only its beginning.
  const timeline = new InFlightPeaks();
  let inFlight = 0;

  const w = sc.workload;
  const rng = new RandomSource(w.seed);
  const mixRng = rng.fork('mix');
  const arrivals = arrivalTimesMs({ rate: w.rate, burstiness: w.burstiness, pattern: w.pattern }, rng.fork('arrivals'));
  const limitCount = w.limit.count ?? Infinity;
  const limitMs = w.limit.durationMs ?? Infinity;

  const startRequest = (index: number, sentMs: number) => {
    const spec = nextSpec(index, w.mix, mixRng);
    const graphs = byKind.get(spec.kind)!;
    const units = unitsOf(spec, models);
    const llmPresent = graphs.some((g) => g.invocations.some((i) => i.task.stage === 'llm'));
    const rec: RequestRecord = { index, kind: spec.kind, scheduledMs: sentMs, sentMs, ok: true, status: 200, itlMs: [], inputTokens: spec.inputTokens, outputTokens: llmPresent ? spec.outputTokens : 1 };
    let pending = 0;
    let endCount = 0;
    let firstToken = -1;
    let lastToken = -1;
    const finish = (t: number) => {
      if (--pending > 0) return;
      if (++endCount > 1) invariants.endedTwice++;
      ended++;
      timeline.set(t, --inFlight);
      rec.e2elMs = t - sentMs;
      rec.ttftMs = firstToken >= 0 ? firstToken - sentMs : rec.e2elMs;
      stream.add(rec);
      o.onRecord?.(rec);
      if (rec.index < keep) records.push(rec);
    };
    const dispatch = () => {
      for (const g of graphs) {
        // Routed at once, as the dispatcher leases every invocation of a graph before any runs.
        // An encoder without executors (monolithic, or given 0): its consumer runs it in its own step (inlineUnits).
        const inline = (i: number) => executors.get(g.invocations[i]!.task.taskId)!.length === 0 && g.invocations[i]!.task.stage === 'encoder';
        const routed = g.invocations.map((inv, i) => {
          if (inline(i)) return undefined;
          const list = executors.get(inv.task.taskId)!;
          const turn = turns.get(inv.task.taskId) ?? 0;
          turns.set(inv.task.taskId, turn + 1);
          const ex = pickLeastOutstanding(list, turn)!;
          ex.outstanding++;
          autoscaling?.invoked(inv.task.taskId);
          return ex;
        });
        const consumers = g.invocations.map(() => [] as number[]);
        g.invocations.forEach((inv, i) => inv.producers.forEach((p) => consumers[p]!.push(i)));
        const doneAt = g.invocations.map(() => -1);
        const waiting = g.invocations.map((inv) => inv.producers.filter((p) => !inline(p)).length);
        const arrivedAt = g.invocations.map(() => events.now);
        pending += g.invocations.filter((_, i) => !inline(i)).length;
        const start = (i: number) => {
          const inv = g.invocations[i]!;
          for (const p of inv.producers) if (!inline(p) && (doneAt[p]! < 0 || doneAt[p]! > events.now)) invariants.startedBeforeProducers++;
          const encoderUnits = inv.producers.reduce((a, p) => a + (g.invocations[p]!.task.stage === 'encoder' ? units : 0), 0);
          const inlineUnits = inv.producers.reduce((a, p) => a + (inline(p) ? units : 0), 0);
          const streamsOut = inv.task.stage === 'llm' && consumers[i]!.length === 0;
          const job: SimJob = {
            id: jobIds++,
            units,
            promptTokens: spec.inputTokens + llmTokensOf(models.encoder, encoderUnits),
            outputTokens: spec.outputTokens,
            ...(inlineUnits > 0 ? { inlineUnits } : {}),
            ...(streamsOut ? { onToken: (t: number) => {
              if (firstToken < 0) firstToken = t;
              else if (itl) rec.itlMs.push(t - lastToken);
              lastToken = t;
            } } : {}),
            done: (t) => {
              const ex = routed[i]!;
              ex.outstanding--;
              ex.holding--;
              doneAt[i] = t;
              for (const c of consumers[i]!) {
                const bytes = inv.task.stage === 'encoder' ? units * models.encoder!.bytesPerUnit : inv.task.stage === 'llm' ? spec.outputTokens * (models.llm?.bytesPerToken ?? 0) : 0;
                const link = routed[c]!.node === ex.node ? intra : inter;
                const arrive = t + transferMs(link, bytes);
                arrivedAt[c] = Math.max(arrivedAt[c]!, arrive);
                if (--waiting[c]! === 0) events.at(arrivedAt[c]!, () => start(c));
              }
              finish(t);
            },
          };
          routed[i]!.holding++;
          // The app function → executor hop: CPU work on the executor's node (none measured for a GPU preset).
          if (sc.invocationOverheadMs > 0) compute.of(routed[i]!.node).run(sc.invocationOverheadMs, () => routed[i]!.submit(job));
          else routed[i]!.submit(job);
        };
        g.invocations.forEach((_, i) => { if (!inline(i) && waiting[i] === 0) start(i); });
      }
    };
    autoscaling?.requestArrived();
    timeline.set(sentMs, ++inFlight);
    // The gateway's hops: CPU work on its node's shared cores (node 0), the rest a fixed delay; all a delay without shared cores.
    const cpuMs = sc.cluster.cores !== undefined ? sc.overheadCpuMs : 0;
    const restMs = sc.overheadMs - cpuMs;
    if (cpuMs > 0) compute.of(0).run(cpuMs, restMs > 0 ? () => events.after(restMs, dispatch) : dispatch);
    else events.after(sc.overheadMs, dispatch);
  };

  // Arrivals are scheduled one ahead (the heap holds the next arrival, not the whole run's).
  let index = 0;
  let arrivalsDone = false;
  const scheduleNext = () => {
    if (index >= limitCount) { arrivalsDone = true; return; }
    const t = arrivals.next().value as number;
    if (t >= limitMs) { arrivalsDone = true; return; }
    const i = index++;
    events.at(t, () => {
      startRequest(i, t);
      scheduleNext();
    });
  };
  scheduleNext();
  autoscaling?.start(() => !arrivalsDone || ended < index);
  const t0 = performance.now();
  let stoppedBy: string | undefined;
  let nextProgressMs = PROGRESS_EVERY_S * 1000;
  try {
    while (events.size > 0) {
      if (o.signal?.aborted) {
        stoppedBy = `stopped at ${(events.now / 1000).toFixed(1)} simulated s (${String(o.signal.reason ?? 'aborted')})`;
        break;
      }
      events.run(Infinity, EVENTS_PER_SLICE);
      if (events.now >= nextProgressMs) {
        o.onProgress?.(events.now / 1000, index);
        nextProgressMs = (Math.floor(events.now / 1000 / PROGRESS_EVERY_S) + 1) * PROGRESS_EVERY_S * 1000;
      }
      await new Promise<void>((r) => setImmediate(r));
    }
  } catch (e) {
    stoppedBy = `failed at ${(events.now / 1000).toFixed(1)} simulated s: ${(e as Error).message}`;
  }
  const wallMs = performance.now() - t0;
  invariants.neverEnded = index - ended;
  for (const ex of everyExecutor) if (ex.maxRunning > ex.capacity) invariants.overCapacity++;
  records.sort((a, b) => a.index - b.index);

  const settings: RunSettings = {
    backend: 'cornserve-simulated',
    api: sc.app.api,
    model_id: sc.name,
    base_url: `simulated:${sc.name}`,
    request_rate: w.rate === Infinity ? 'inf' : w.rate,
    burstiness: w.burstiness,
    max_concurrency: null,
    pattern: patternText(w.pattern),
    seed: w.seed,
    num_prompts: w.limit.count ?? null,
    duration_limit_s: w.limit.durationMs !== undefined ? w.limit.durationMs / 1000 : null,
    workload: { ...w.mix },
    slo: w.slo ?? null,
  };
  // Over the cap, the aggregates come from every request (the stream); the per-request lists from the kept ones.
  // A stopped run counts the requests that ended (those in flight are in invariants.neverEnded).
  const ranOut = { startedAt: 0, interrupted: stoppedBy !== undefined, ...(stoppedBy ? { partialReason: stoppedBy } : {}) };
  const results: RunResults = records.length < ended
    ? { ...runResults(settings, records, ranOut), ...stream.aggregates(), requests_total: ended, requests_kept: records.length, in_flight_timeline: timeline.points() }
    : runResults(settings, records, ranOut);
  const deployment = [...tasks.values()].map((t) => ({ label: t.label, taskId: t.taskId, stage: t.stage, executors: executors.get(t.taskId)!.length, nodes: executors.get(t.taskId)!.map((e) => e.node) }));
  return { results, invariants, deployment, scaling: autoscaling?.decisions ?? [], events: events.processed, requests: index, wallMs, ...(stoppedBy ? { stoppedBy } : {}), memory: kvUse(tasks, executors) };
}

/** What the LLM executors' KV caches held, per task label. */
function kvUse(tasks: Map<string, SimTask>, executors: Map<string, SimExecutor[]>): NonNullable<SimOutcome['memory']> {
  const out: NonNullable<SimOutcome['memory']> = {};
  for (const t of tasks.values()) {
    const llms = executors.get(t.taskId)!.filter((e): e is SimLlm => e instanceof SimLlm);
    if (!llms.length) continue;
    out[t.label] = {
      kvTokens: llms[0]!.totalBlocks * llms[0]!.blockSize,
      totalBlocks: llms[0]!.totalBlocks,
      maxBlocksUsed: Math.max(...llms.map((e) => e.maxBlocksUsed)),
      preemptions: llms.reduce((a, e) => a + e.preemptions, 0),
    };
  }
  return out;
}

/** Mean invocations of each task per app request, over the request mix (the gateway's graph shape for the autoscaler). */
function invocationsPerRequest(byKind: Map<RequestKind, SimGraph[]>, sc: Scenario): Record<string, number> {
  const total = sc.workload.mix.mix.reduce((a, m) => a + m.weight, 0);
  const out: Record<string, number> = {};
  for (const { kind, weight } of sc.workload.mix.mix) {
    for (const g of byKind.get(kind)!) for (const inv of g.invocations) out[inv.task.taskId] = (out[inv.task.taskId] ?? 0) + weight / total;
  }
  return out;
}
