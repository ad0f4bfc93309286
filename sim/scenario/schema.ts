/**
 * A scenario (YAML) → checked plain data. Every problem is a ScenarioError naming the field.
 * The workload block takes the bench client's options (same names as `cornserve bench`'s flags, camelCase) and
 * is parsed by the bench client's own parser (bench/client/config.ts).
 */
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { benchConfig, type BenchConfig } from '../../bench/client/config.js';
import { LINK_PRESETS } from '../cluster/links.js';
import { ScenarioError } from '../apps/record.js';
import type { AutoscaleSettings } from '../autoscale.js';
import { probeModels, stageModelsSchema, type StageModels } from '../latency/models.js';
import { parsePlan, type Plan } from '../../lib/plan.js';
import { GIB } from '../memory/budget.js';
import { checkLlmFits, type ScenarioMemory } from '../memory/fit.js';
import { modelsFor } from '../memory/scale.js';
import { loadModelSpecs } from '../memory/specs.js';

export { ScenarioError };

/** Every *.yaml here is a presets file: gpus.yaml (published profiles), local-cpu.yaml (fitted here by `cornserve simulate fit`). */
export const PRESETS_DIR = fileURLToPath(new URL('../presets/', import.meta.url));
export const SCENARIOS_DIR = fileURLToPath(new URL('../scenarios/', import.meta.url));
export const BUILTIN_SCENARIOS = ['local-1x4', 'cluster-64x8'] as const;

/** The "overhead" benchmark (docs/benchmarks/history.md, the first whole-platform table): the gateway → app function → dispatcher hops add 1.29 ms per request (quiet machine). */
export const MEASURED_OVERHEAD_MS = 1.29;

const linkName = z.string().refine((s) => s in LINK_PRESETS, { message: `a link preset (${Object.keys(LINK_PRESETS).join(', ')})` });

/** min ≥ 1: the simulated dispatcher always has an executor to route to (no scale from zero). */
const policySchema = z.union([
  z.object({ min: z.number().int().positive(), max: z.number().int().positive(), target: z.number().positive() }).strict(),
  z.object({ min: z.number().int().positive(), max: z.number().int().positive(), sloMs: z.number().positive() }).strict(),
]);

const scenarioSchema = z.object({
  name: z.string().min(1),
  cluster: z.object({
    nodes: z.number().int().positive(),
    devicesPerNode: z.number().int().positive(),
    device: z.string().min(1),
    intraNode: linkName.default('nvlink3'),
    interNode: linkName.default('100gbe'),
    /** CPU cores each node's executors share (processor sharing, sim/engine/compute.ts); default: the device
     *  preset's host.cores (local-cpu: this machine's), else none shared (every device independent, as GPUs are). */
    cores: z.number().positive().optional(),
  }).strict(),
  app: z.object({
    /** An app file (relative to the repository root), recorded through the SDK. */
    file: z.string().min(1),
    api: z.enum(['chat', 'invoke']).default('chat'),
    /** invoke: the request_data; chat: fields merged over the bench client's chat request. */
    request: z.record(z.string(), z.unknown()).optional(),
  }).strict(),
  deployment: z.object({
    /** manual: every task on its own executors; monolithic: encoders run inside the LLM (or generator) executor that consumes
     *  them (vLLM with its encoder inside, our LLM executor with encoderFission: false), no encoder executors. */
    /** plan: a plan as `cornserve plan` writes it (lib/plan.ts), from `file` (YAML or JSON) or inline as `plan`. */
    mode: z.enum(['manual', 'monolithic', 'autoscaler', 'plan']).default('manual'),
    file: z.string().min(1).optional(),
    plan: z.unknown().optional(),
    /** Executors per task label (printed by a run); tasks not named get `default`. An encoder given 0 runs inside
     *  the LLM or generator executor that consumes it (a partly colocated plan). */
    replicas: z.record(z.string(), z.number().int().nonnegative()).default({}),
    default: z.number().int().positive().default(1),
    /** autoscaler mode: the live Autoscaler decides every tickS of simulated time; tasks start at `replicas` where given
     *  (a plan's counts, as after `cornserve apply-plan`), else at their policy's min. */
    autoscaler: z.object({
      tickS: z.number().positive().default(2),
      coldStartS: z.number().nonnegative().default(10),
      policy: policySchema.default({ min: 1, max: 1_000_000, target: 2 }),
      /** Policy per task label (the others get `policy`). */
      policies: z.record(z.string(), policySchema).default({}),
      /** The Autoscaler's options (windows and delays in ms, as policies/autoscaler.ts names them). */
      options: z.object({
        stableWindowMs: z.number().positive(),
        panicWindowMs: z.number().positive(),
        panicThreshold: z.number().positive(),
        scaleDownDelayMs: z.number().nonnegative(),
        maxScaleDownRate: z.number().min(1),
        tolerance: z.number().nonnegative(),
      }).partial().strict().default({}),
    }).strict().optional(),
  }).strict().default({ mode: 'manual', replicas: {}, default: 1 }),
  workload: z.record(z.string(), z.union([z.string(), z.number()])).default({}),
  slo: z.string().optional(),
  /** Per-stage model overrides on top of the device preset. */
  models: z.partialRecord(z.enum(['encoder', 'llm', 'generator', 'echo']), z.record(z.string(), z.unknown())).optional(),
  /** The gateway → app function hops per request; default: the preset's host.requestMs, else MEASURED_OVERHEAD_MS. */
  overheadMs: z.number().nonnegative().optional(),
  /** Device memory on: the model's sizes (sim/memory/models.yaml) give every executor its weights, activations and
   *  KV cache, and scale the preset's latency rows to the model. */
  memory: z.object({ model: z.string().min(1), utilization: z.number().positive().max(1).default(0.9) }).strict().optional(),
}).strict();

export interface Scenario {
  name: string;
  /** cores: set when the node's executors share CPU cores (a local, CPU-backed preset); absent = independent devices. */
  cluster: { nodes: number; devicesPerNode: number; device: string; intraNode: string; interNode: string; cores?: number };
  app: { file: string; api: 'chat' | 'invoke'; request?: Record<string, unknown> };
  deployment: {
    mode: 'manual' | 'monolithic' | 'autoscaler';
    replicas: Record<string, number>;
    default: number;
    autoscaler?: AutoscaleSettings;
    /** From a plan: executors per node and label (placed there, not by the allocation policy), and devices per executor. */
    placement?: Plan['placement'];
    devicesPerExecutor?: Record<string, number>;
    /** Where the placement came from (error messages name it). */
    planSource?: string;
  };
  workload: BenchConfig;
  models: StageModels;
  /** Per request, the gateway → app function (→ dispatcher) hops, ms. With shared cores it is CPU work on node 0's
   *  cores (the gateway's node), so it slows the executors there and they slow it; else a fixed delay. */
  overheadMs: number;
  /** The part of overheadMs that is the platform's CPU work (run on shared cores): the preset's measured host.requestMs at
   *  most (all of it without a host block). The rest of a larger overhead measured on a busy machine is waiting for
   *  the machine (other jobs), a fixed delay: it must not take our cores' time from the executors. */
  overheadCpuMs: number;
  /** Per invocation, the app function → executor hop and its reply, ms (CPU work on the executor's node's shared
   *  cores); 0 unless the preset measured it (host.invocationMs). */
  invocationOverheadMs: number;
  /** Device memory (a `memory` block): absent = no memory limit beyond the preset's kvTokens. */
  memory?: ScenarioMemory;
}

export interface Overrides { durationS?: number; seed?: number; rate?: number }

/**
 * A CPU-backed preset's host: the cores the node's executors share and the platform's own CPU cost per request
 * and per invocation, measured with the live platform by `cornserve simulate fit` (sim/fit/host.ts).
 */
export const hostSchema = z.object({
  cores: z.number().positive(),
  requestMs: z.number().nonnegative(),
  invocationMs: z.number().nonnegative(),
}).strict();
export type HostModel = z.infer<typeof hostSchema>;

/** A device's memory, GiB, and where the figure comes from. */
const deviceMemorySchema = z.object({ gib: z.number().positive(), source: z.string().min(1) }).strict();

export interface DevicePreset { source: string; models: StageModels; host?: HostModel; memory?: z.infer<typeof deviceMemorySchema> }

const presetsSchema = z.object({ devices: z.record(z.string(), z.object({ source: z.string(), memory: deviceMemorySchema.optional(), models: stageModelsSchema, host: hostSchema.optional() }).strict()) });

export async function loadPresets(): Promise<Record<string, DevicePreset>> {
  const out: Record<string, DevicePreset> = {};
  for (const f of (await readdir(PRESETS_DIR)).filter((n) => n.endsWith('.yaml')).sort()) {
    const r = presetsSchema.safeParse(parseYaml(await readFile(join(PRESETS_DIR, f), 'utf8')));
    if (!r.success) throw new ScenarioError(`presets file sim/presets/${f}: ${issuesText(r.error)}`);
    for (const [name, p] of Object.entries(r.data.devices)) {
      if (out[name]) throw new ScenarioError(`presets file sim/presets/${f}: device '${name}' is defined twice`);
      out[name] = p;
    }
  }
  return out;
}

const issuesText = (e: z.ZodError) => e.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; ');

/** Parses and checks a scenario object (the YAML's content). */
export async function parseScenario(raw: unknown, overrides: Overrides = {}, baseDir = process.cwd()): Promise<Scenario> {
  const r = scenarioSchema.safeParse(raw);
  if (!r.success) throw new ScenarioError(`scenario: ${issuesText(r.error)}`);
  const s = r.data;
  const presets = await loadPresets();
  const preset = presets[s.cluster.device];
  if (!preset) throw new ScenarioError(`cluster.device: unknown preset '${s.cluster.device}' (known: ${Object.keys(presets).join(', ')})`);
  const memory = s.memory ? memoryOf(s.memory, s.cluster.device, preset, presets) : undefined;
  const models: StageModels = memory ? modelsFor(preset.models, memory.spec) : { ...preset.models };
  for (const [k, v] of Object.entries(s.models ?? {})) {
    const merged = stageModelsSchema.safeParse({ [k]: { ...(models[k as keyof StageModels] ?? {}), ...(v as object) } });
    if (!merged.success) throw new ScenarioError(`models.${k}: ${issuesText(merged.error)}`);
    Object.assign(models, merged.data);
  }
  probeModels(models, `models (device ${s.cluster.device})`);
  if (memory && models.llm) checkLlmFits(memory, models.llm, s.cluster.devicesPerNode);
  const cores = s.cluster.cores ?? preset.host?.cores;
  const cluster: Scenario['cluster'] = { ...s.cluster, ...(cores !== undefined ? { cores } : {}) };
  const overheadMs = s.overheadMs ?? preset.host?.requestMs ?? MEASURED_OVERHEAD_MS;
  const host = { overheadMs, overheadCpuMs: Math.min(overheadMs, preset.host?.requestMs ?? Infinity), invocationOverheadMs: preset.host?.invocationMs ?? 0 };
  const w = s.workload;
  const str = (k: string, d: string) => (w[k] === undefined ? d : String(w[k]));
  let workload: BenchConfig;
  try {
    workload = benchConfig({
      api: s.app.api,
      ...(s.app.api === 'chat' ? { model: s.name } : { app: s.name }),
      requestRate: overrides.rate !== undefined ? String(overrides.rate) : str('requestRate', '1'),
      burstiness: str('burstiness', '1'),
      ...(w.numRequests !== undefined ? { numRequests: String(w.numRequests) } : {}),
      ...(overrides.durationS !== undefined ? { duration: String(overrides.durationS) } : w.duration !== undefined ? { duration: String(w.duration) } : {}),
      pattern: str('pattern', 'constant'),
      seed: overrides.seed !== undefined ? String(overrides.seed) : str('seed', '0'),
      mix: str('mix', 'text:1'),
      inputLen: str('inputLen', '128'),
      outputLen: str('outputLen', '32'),
      rangeRatio: str('rangeRatio', '0'),
      imageSize: str('imageSize', '224x224'),
      audioSeconds: str('audioSeconds', '2'),
      videoFrames: str('videoFrames', '4'),
      ...(s.slo ? { slo: s.slo } : {}),
      soakSampleS: '10',
      requestTimeout: '600',
      drainTimeout: '60',
      plots: true,
    });
  } catch (e) {
    throw new ScenarioError(`workload: ${(e as Error).message}`);
  }
  const unknownKeys = Object.keys(w).filter((k) => !['requestRate', 'burstiness', 'numRequests', 'duration', 'pattern', 'seed', 'mix', 'inputLen', 'outputLen', 'rangeRatio', 'imageSize', 'audioSeconds', 'videoFrames'].includes(k));
  if (unknownKeys.length) throw new ScenarioError(`workload.${unknownKeys[0]}: unknown option`);
  const d = s.deployment;
  if (d.autoscaler && d.mode !== 'autoscaler') throw new ScenarioError(`deployment.autoscaler: only for mode autoscaler (mode is ${d.mode})`);
  const mem = memory ? { memory } : {};
  if (d.mode === 'plan') return { name: s.name, cluster, app: s.app, deployment: await planDeployment(d, s.cluster, baseDir), workload, models, ...host, ...mem };
  if (d.file !== undefined || d.plan !== undefined) throw new ScenarioError(`deployment.${d.file !== undefined ? 'file' : 'plan'}: only for mode plan (mode is ${d.mode})`);
  const a = d.mode === 'autoscaler' ? (d.autoscaler ?? scenarioSchema.shape.deployment.unwrap().shape.autoscaler.unwrap().parse({})) : undefined;
  const deployment: Scenario['deployment'] = {
    mode: d.mode,
    replicas: d.replicas,
    default: d.default,
    ...(a ? { autoscaler: { tickMs: a.tickS * 1000, coldStartMs: a.coldStartS * 1000, policy: a.policy, policies: a.policies, options: a.options } } : {}),
  };
  return { name: s.name, cluster, app: s.app, deployment, workload, models, ...host, ...mem };
}

/** A `memory` block → the model's sizes and the device's memory; an unknown model or a preset without memory is refused. */
function memoryOf(m: { model: string; utilization: number }, deviceName: string, preset: DevicePreset, presets: Record<string, DevicePreset>): ScenarioMemory {
  const specs = loadModelSpecs();
  const spec = specs[m.model];
  if (!spec) throw new ScenarioError(`memory.model: unknown model '${m.model}' (known: ${Object.keys(specs).join(', ')})`);
  if (!preset.memory) throw new ScenarioError(`cluster.device: preset '${deviceName}' has no memory size, which memory.model needs (presets with one: ${Object.entries(presets).filter(([, p]) => p.memory).map(([n]) => n).join(', ')})`);
  return { model: m.model, spec, deviceName, device: { bytes: preset.memory.gib * GIB, utilization: m.utilization } };
}

/** A scenario file, or a built-in one by name. */
export async function loadScenario(fileOrName: string, overrides: Overrides = {}): Promise<Scenario> {
  const builtin = (BUILTIN_SCENARIOS as readonly string[]).includes(fileOrName);
  const file = builtin ? `${SCENARIOS_DIR}${fileOrName}.yaml` : fileOrName;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new ScenarioError(`scenario: cannot read ${file}: ${(e as Error).message} (built-in scenarios: ${BUILTIN_SCENARIOS.join(', ')})`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new ScenarioError(`scenario ${file}: not valid YAML: ${(e as Error).message}`);
  }
  return parseScenario(raw, overrides, builtin ? process.cwd() : dirname(resolve(file)));
}

/**
 * A plan deployment → the simulator's: replicas per label, devices per executor and the plan's placement.
 * Refused before the run when the plan does not fit the scenario's cluster (a node it names, or the devices it
 * places on a node or in all); tasks the app does not have are refused when the app is recorded (run.ts).
 */
async function planDeployment(d: { file?: string; plan?: unknown }, cluster: Scenario['cluster'], baseDir: string): Promise<Scenario['deployment']> {
  if ((d.file === undefined) === (d.plan === undefined)) throw new ScenarioError('deployment: mode plan needs a plan file (deployment.file) or an inline plan (deployment.plan), one of them');
  let raw = d.plan;
  const where = d.file !== undefined ? `deployment.file (${d.file})` : 'deployment.plan';
  if (d.file !== undefined) {
    const path = resolve(baseDir, d.file);
    try {
      raw = parseYaml(await readFile(path, 'utf8')); // YAML is a superset of JSON: `cornserve plan --out` writes either
    } catch (e) {
      throw new ScenarioError(`${where}: cannot read the plan ${path}: ${(e as Error).message}`);
    }
  }
  let plan: Plan;
  try {
    plan = parsePlan(raw, where);
  } catch (e) {
    throw new ScenarioError((e as Error).message);
  }
  const devicesPer = Object.fromEntries(plan.components.map((c) => [c.label, c.devicesPerExecutor]));
  const replicas = Object.fromEntries(plan.components.map((c) => [c.label, c.replicas]));
  const perNode = new Map<number, number>();
  const placed = new Map<string, number>();
  for (const p of plan.placement) {
    if (p.node >= cluster.nodes) throw new ScenarioError(`${where}: placement puts ${p.executors} × ${p.label} on node ${p.node}, but the cluster has ${cluster.nodes} node(s)`);
    perNode.set(p.node, (perNode.get(p.node) ?? 0) + p.executors * devicesPer[p.label]!);
    placed.set(p.label, (placed.get(p.label) ?? 0) + p.executors);
  }
  for (const [node, used] of perNode) {
    if (used > cluster.devicesPerNode) throw new ScenarioError(`${where}: placement needs ${used} devices on node ${node}, but a node of the cluster has ${cluster.devicesPerNode}`);
  }
  const total = plan.components.reduce((a, c) => a + c.replicas * c.devicesPerExecutor, 0);
  if (total > cluster.nodes * cluster.devicesPerNode) throw new ScenarioError(`${where}: the plan needs ${total} devices, the cluster has ${cluster.nodes} × ${cluster.devicesPerNode}`);
  const monolithic = plan.mode === 'monolithic';
  for (const c of plan.components) {
    const inlined = c.stage === 'encoder' && (monolithic || c.replicas === 0);
    if (!inlined && (placed.get(c.label) ?? 0) !== c.replicas) throw new ScenarioError(`${where}: placement places ${placed.get(c.label) ?? 0} × ${c.label}, its component has ${c.replicas} replicas`);
  }
  return { mode: monolithic ? 'monolithic' : 'manual', replicas, default: 1, placement: plan.placement, devicesPerExecutor: devicesPer, planSource: where };
}
