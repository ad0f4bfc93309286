/**
 * `cornserve simulate fit`: measures our executors' model steps on this machine with the tiny models — the
 * calls the executors' engines make, with the executors' own session settings — and fits the simulator's
 * latency models with sim/latency/fit.ts:
 *  - Eric (tiny-vision): preprocessing + runVision of a batch of images, against Σ patches;
 *  - the LLM executor (tiny-lm-a): a batched prefill (executors/llm/steps.ts) against Σtokens and Σtokens²;
 *    one decode step against Σcontext and the batch;
 *  - Geri (tiny-image-gen): generateImage of a batch (Geri's worker runs a batch's items one after another),
 *    per denoising step, against the batch.
 * Each point is the median of `repeats` runs after one warm-up. What this does not see is the executors'
 * process hops (HTTP, ZeroMQ, sidecar) and several executors sharing the cores; the validation measures those.
 */
import { cpus, hostname, loadavg } from 'node:os';
import { medianMsEach } from './timing.js';
import { stringify } from 'yaml';
import { join } from 'node:path';
import { syntheticPng } from '../../bench/workload/media.js';
import { defaultModelsDir } from '../../executors/models/catalog.js';
import { loadModel } from '../../executors/models/loader.js';
import { preprocessImage } from '../../executors/models/preprocess/image.js';
import { generateImage, runVision } from '../../executors/models/run.js';
import { KvCache } from '../../policies/kv-cache.js';
import { LlmModel } from '../../executors/llm/model.js';
import { decode, prefill } from '../../executors/llm/steps.js';
import { fitDecode, fitPrefill, fitUnits, type DecodeSample, type PrefillSample, type UnitSample } from '../latency/fit.js';
import { ModelOutputError, probeModels, type StageModels } from '../latency/models.js';
import type { HostModel } from '../scenario/schema.js';
import { measureHost, type HostSamples } from './host.js';

/** Eric's worker sessions (executors/eric/worker/worker.ts SESSION): one thread, sequential. */
const ERIC_SESSION = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' as const };
const MODEL_ID = 'cornserve/tiny-vlm-a';
/** The LLM executor's defaults (executors/llm/main.ts, engine.ts): no KV budget beyond maxBatch slots × max positions. */
const LLM_MAX_BATCH = 32;
const LLM_MAX_PREFILL_TOKENS = 4096;

export interface FitPlan {
  /** Square image sides (px) and images per batch. */
  encoder: Array<{ side: number; batch: number }>;
  /** Prompt lengths of one prefill batch. */
  prefill: number[][];
  /** Decode batches: sequences × context each. */
  decode: Array<{ batch: number; context: number }>;
  /** Image-generator batch sizes (64 × 64 images, the model's default steps). */
  generator: number[];
  repeats: number;
}

export const FULL_PLAN: FitPlan = {
  encoder: [{ side: 56, batch: 1 }, { side: 112, batch: 1 }, { side: 224, batch: 1 }, { side: 336, batch: 1 }, { side: 448, batch: 1 }, { side: 112, batch: 4 }, { side: 224, batch: 2 }],
  prefill: [[16], [64], [128], [256], [512], [1024], [64, 64, 64, 64], [128, 128], [256, 256], [32, 32, 32, 32, 32, 32, 32, 32]],
  decode: [1, 4, 8, 16, 32].flatMap((batch) => [64, 256, 512].map((context) => ({ batch, context }))),
  generator: [1, 2, 4],
  repeats: 7,
};

/** A handful of points per model (tests): the same code, seconds instead of minutes. */
export const QUICK_PLAN: FitPlan = {
  encoder: [{ side: 56, batch: 1 }, { side: 112, batch: 1 }, { side: 224, batch: 1 }],
  prefill: [[16], [64], [128], [32, 32]],
  decode: [{ batch: 1, context: 64 }, { batch: 4, context: 64 }, { batch: 2, context: 256 }, { batch: 8, context: 128 }],
  generator: [1, 2],
  repeats: 1,
};

export interface FitOutcome {
  models: StageModels;
  /** The cores the node's executors share and the platform's per-request and per-invocation cost (sim/fit/host.ts). */
  host: HostModel;
  samples: { encoder: UnitSample[]; prefill: PrefillSample[]; decode: DecodeSample[]; generator: UnitSample[]; host: HostSamples };
  machine: string;
  seconds: number;
  /** The 1-minute load average when the measurement ended (the machine is shared: say how busy it was). */
  loadAverage: number;
}

export const machineText = () => `${hostname()} (${cpus().length} × ${cpus()[0]?.model.trim() ?? 'cpu'})`;

/** Measures and fits; `progress` gets one line per point. */
export async function measureAndFit(plan: FitPlan, progress: (line: string) => void, modelsDir = defaultModelsDir()): Promise<FitOutcome> {
  const t0 = performance.now();
  const total = plan.encoder.length + plan.prefill.length + plan.decode.length + plan.generator.length;
  let done = 0;
  const step = (what: string, ms: number) => progress(`fit [${++done}/${total}] ${what}: ${ms.toFixed(2)} ms`);

  const vision = await loadModel(join(modelsDir, 'tiny-vision'), { modelIds: [MODEL_ID], sessionOptions: ERIC_SESSION });
  const encoder: UnitSample[] = [];
  const pre = vision.manifest.preprocessing.image!;
  try {
    const inputs = await Promise.all(plan.encoder.map(({ side, batch }) => Promise.all(Array.from({ length: batch }, (_, i) => preprocessImage(syntheticPng(side, side, i + 1), pre)))));
    // Preprocessing is in the timing: Eric's preprocessing threads share this machine's cores with the encoder.
    const ms = await medianMsEach(plan.repeats, plan.encoder.map(({ side, batch }) => async () => {
      const items = await Promise.all(Array.from({ length: batch }, (_, i) => preprocessImage(syntheticPng(side, side, i + 1), pre)));
      await runVision(vision, items, MODEL_ID);
    }));
    plan.encoder.forEach(({ side, batch }, i) => {
      const patches = inputs[i]!.reduce((a, it) => a + it.patches.length / it.patchDim, 0);
      encoder.push({ units: patches, ms: ms[i]! });
      step(`encoder ${batch} × ${side}×${side} (${patches} patches)`, ms[i]!);
    });
  } finally {
    await vision.close();
  }

  const lm = await LlmModel.load(join(modelsDir, 'tiny-lm-a'), { modelId: MODEL_ID });
  const prefillSamples: PrefillSample[] = [];
  const decodeSamples: DecodeSample[] = [];
  const { hidden, layers, heads, headDim, maxPositions, padMultiple } = lm.config;
  try {
    const pms = await medianMsEach(plan.repeats, plan.prefill.map((tokens) => {
      const items = tokens.map((n) => ({ embeds: new Float32Array(n * hidden).fill(0.01), n }));
      return () => prefill(lm, undefined, items);
    }));
    plan.prefill.forEach((tokens, i) => {
      prefillSamples.push({ tokens, ms: pms[i]! });
      step(`LLM prefill ${tokens.length} × ${tokens[0]} tokens`, pms[i]!);
    });
    const dms = await medianMsEach(plan.repeats, plan.decode.map(({ batch, context }) => {
      const cache = new KvCache({ layers, heads, headDim, maxPositions });
      cache.reserve(batch, context + 1, []);
      const tokens = Array<number>(batch).fill(65);
      const lens = Array<number>(batch).fill(context);
      return () => decode(lm, cache, tokens, lens);
    }));
    plan.decode.forEach(({ batch, context }, i) => {
      decodeSamples.push({ contexts: Array<number>(batch).fill(context), ms: dms[i]! });
      step(`LLM decode step, ${batch} sequences × ${context} context`, dms[i]!);
    });
  } finally {
    await lm.close();
  }

  const gen = await loadModel(join(modelsDir, 'tiny-image-gen'));
  const generator: UnitSample[] = [];
  const steps = gen.manifest.generation.image!.default_steps;
  try {
    const embeddings = { data: new Float32Array(16 * 256).fill(0.02), shape: [16, 256] as [number, number] };
    const gms = await medianMsEach(plan.repeats, plan.generator.map((batch) => async () => {
      for (let i = 0; i < batch; i++) await generateImage(gen, embeddings, { height: 64, width: 64, numInferenceSteps: steps, seed: i });
    }));
    plan.generator.forEach((batch, i) => {
      generator.push({ units: batch, ms: gms[i]! / steps });
      step(`generator batch of ${batch} (64×64, ${steps} steps), per step`, gms[i]! / steps);
    });
  } finally {
    await gen.close();
  }

  // The platform's own hops, with the live platform (3 serial requests per model repeat: they are short and noisy).
  const host = await measureHost(plan.repeats * 3, progress);

  const geometry: ModelGeometry = { patchSize: pre.patch_size, hidden, maxPositions, padMultiple, steps };
  const samples = { encoder, prefill: prefillSamples, decode: decodeSamples, generator, host: host.samples };
  return { models: fitSamples(samples, geometry), host: host.host, samples, machine: machineText(), seconds: (performance.now() - t0) / 1000, loadAverage: loadavg()[0]! };
}

/** What the fit takes from the model folders besides the timings. */
export interface ModelGeometry { patchSize: number; hidden: number; maxPositions: number; padMultiple: number; steps: number }

/** Measured samples → the simulator's stage models (refused if they could give a negative duration). */
export function fitSamples(samples: FitOutcome['samples'], g: ModelGeometry): StageModels {
  const { encoder, prefill: prefillSamples, decode: decodeSamples, generator } = samples;
  const { patchSize, hidden, maxPositions, padMultiple, steps } = g;
  // A measured profile can fit a small negative constant (a decode step's cost is nearly all per sequence); a
  // model must never give a negative duration, so such a fit is redone through the origin.
  const nonNegative = <T extends { a: number }>(fit: (o: { intercept?: boolean }) => T): T => {
    const free = fit({});
    return free.a >= 0 ? free : fit({ intercept: false });
  };
  const enc = nonNegative((o) => fitUnits(encoder, o));
  const perStep = nonNegative((o) => fitUnits(generator, o));
  const models: StageModels = {
    // bytesPerUnit: float32 embeddings of `hidden` per output token, one token per 4 patches (2 × 2 merge).
    encoder: { ...enc, patchSize, audioUnitsPerSecond: 25, bytesPerUnit: (hidden * 4) / 4 },
    llm: {
      prefill: nonNegative((o) => fitPrefill(prefillSamples, o)),
      decode: nonNegative((o) => fitDecode(decodeSamples, o)),
      kvTokens: LLM_MAX_BATCH * maxPositions,
      // The live engine holds maxBatch whole slots, so its slot limit binds before these blocks do.
      kvBlockSize: 16,
      maxBatch: LLM_MAX_BATCH,
      maxPrefillTokens: LLM_MAX_PREFILL_TOKENS,
      padMultiple,
      bytesPerToken: 0,
    },
    generator: { perStep, steps },
    echo: { a: 0 },
  };
  try {
    probeModels(models, 'fitted models');
  } catch (e) {
    throw new ModelOutputError(`${(e as Error).message}: the measurements were too noisy for a usable fit (another job on the cores?); run it again on a quieter machine`);
  }
  return models;
}

/** The preset file: a header saying where, when and how it was fitted, then `devices: {NAME: {source, models}}`. */
export function presetYaml(device: string, o: FitOutcome, date = new Date()): string {
  const day = date.toISOString().slice(0, 10);
  const header = [
    `# FITTED latency models for the simulator: device '${device}' = this machine running our tiny models.`,
    `# Fitted on ${o.machine}, ${day}, by \`cornserve simulate fit\` (sim/fit/measure.ts) in ${o.seconds.toFixed(0)} s, load average ${o.loadAverage.toFixed(1)}:`,
    '# Eric + tiny-vision (a + b·patches), the LLM executor + tiny-lm-a (prefill a + b·Σtokens + c·Σtokens²,',
    '# decode step a + b·Σcontext + c·batch), Geri + tiny-image-gen (per step a + b·batch). Medians of repeated runs',
    '# of the engines\' own model calls, one process alone. host: the cores every executor and the platform share',
    '# (the simulator runs all their work there, processor sharing), and the live platform\'s own cost per request and',
    '# per invocation (serial echo requests, one or two calls each, through a `cornserve up` composition with a',
    '# zero-time echo executor: sim/fit/host.ts). Re-run on another machine: the numbers are this machine\'s. Samples (ms):',
    `#   encoder ${o.samples.encoder.map((s) => `${s.units}p→${s.ms.toFixed(1)}`).join(', ')}`,
    `#   prefill ${o.samples.prefill.map((s) => `${s.tokens.length}×${s.tokens[0]}→${s.ms.toFixed(1)}`).join(', ')}`,
    `#   decode  ${o.samples.decode.map((s) => `${s.contexts.length}×${s.contexts[0]}→${s.ms.toFixed(1)}`).join(', ')}`,
    `#   generator per step ${o.samples.generator.map((s) => `b${s.units}→${s.ms.toFixed(2)}`).join(', ')}`,
    `#   host echo request, one call→${o.samples.host.onceMs.toFixed(2)}, two calls→${o.samples.host.twiceMs.toFixed(2)}`,
  ].join('\n');
  const round = (v: unknown): unknown => (typeof v === 'number' ? Number(v.toPrecision(6)) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, round(x)])) : v);
  const body = { devices: { [device]: { source: `fitted on ${o.machine}, ${day}, by cornserve simulate fit (tiny models)`, models: round(o.models), host: round(o.host) } } };
  return `${header}\n${stringify(body)}`;
}
