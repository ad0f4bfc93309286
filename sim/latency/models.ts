/**
 * Latency models, one per stage, each a function of the batch its scheduler formed (times in ms):
 *  - encoder: a + b·Σunits + c·Σ(units of one item)² (image patches, video frames × patches, audio units; c: attention
 *    over a whole image, as a vision tower's full-attention layers do);
 *  - LLM prefill: a + b·Σtokens + c·Σtokens² (DistServe), decode step: a + b·Σcontext + c·batch (DistServe;
 *    an optional second set above `largeBatchFrom`, as DistServe's profiles have);
 *  - generator: steps × (a + b·batch);
 *  - echo: the task's configured service time (+ a).
 * Every evaluation is checked: a model that yields a negative or non-finite duration is an error naming it.
 */
import { z } from 'zod';
import type { StageKind as LabelStageKind } from '../../control/descriptors/labels.js';

const coef = z.number().finite();
export const linear2 = z.object({ a: coef, b: coef }).strict();
export const quad3 = z.object({ a: coef, b: coef, c: coef }).strict();

export const encoderModelSchema = z.object({
  a: coef,
  b: coef,
  /** Per item, × its units² (attention across the item's units); absent = 0. */
  c: coef.optional(),
  /** Pixels per patch side: an image of w×h has ceil(w/p)·ceil(h/p) patches. */
  patchSize: z.number().int().positive().default(14),
  /** Units per second of audio. */
  audioUnitsPerSecond: z.number().positive().default(50),
  /** Bytes of embeddings per unit sent on to the LLM (hidden size × 4 for float32). */
  bytesPerUnit: z.number().nonnegative().default(4096 * 2),
  /** LLM prompt tokens per unit (a 2 × 2 patch merge: 0.25); absent = 1. */
  llmTokensPerUnit: z.number().positive().optional(),
  maxBatchSize: z.number().int().positive().optional(),
  /** Images cut into tiles (InternVL's dynamic tiling): units = tiles × (size ÷ patchSize)². */
  tile: z.object({ size: z.number().int().positive(), maxTiles: z.number().int().positive(), thumbnail: z.boolean() }).strict().optional(),
}).strict();

export const llmModelSchema = z.object({
  prefill: quad3,
  decode: quad3,
  decodeLarge: quad3.extend({ from: z.number().int().positive() }).strict().optional(),
  /** KV-cache capacity of one executor, tokens (device memory minus weights, over bytes per token). */
  kvTokens: z.number().int().positive(),
  /** Tokens per KV-cache block (vLLM's default block size): admission and decode take whole blocks. */
  kvBlockSize: z.number().int().positive().default(16),
  maxBatch: z.number().int().positive().default(32),
  maxPrefillTokens: z.number().int().positive().default(4096),
  padMultiple: z.number().int().positive().default(1),
  /** Bytes per generated token streamed to a consumer (hidden state for a generator; 0 = text only). */
  bytesPerToken: z.number().nonnegative().default(0),
}).strict();

export const generatorModelSchema = z.object({
  perStep: linear2,
  steps: z.number().int().positive(),
  maxBatchSize: z.number().int().positive().optional(),
}).strict();

export const echoModelSchema = z.object({ a: coef.default(0) }).strict();

export const stageModelsSchema = z.object({
  encoder: encoderModelSchema.optional(),
  llm: llmModelSchema.optional(),
  generator: generatorModelSchema.optional(),
  echo: echoModelSchema.optional(),
}).strict();

export type EncoderModel = z.infer<typeof encoderModelSchema>;
export type LlmModel = z.infer<typeof llmModelSchema>;
export type GeneratorModel = z.infer<typeof generatorModelSchema>;
export type EchoModel = z.infer<typeof echoModelSchema>;
export type StageModels = z.infer<typeof stageModelsSchema>;
export type StageKind = keyof StageModels;
// The stage kinds plans label tasks with are exactly the kinds this file models (a compile-time check).
const stageKindsAgree: [StageKind] extends [LabelStageKind] ? ([LabelStageKind] extends [StageKind] ? true : never) : never = true;
void stageKindsAgree;

export class ModelOutputError extends Error {
  override readonly name = 'ModelOutputError';
}

/** `ms` if it is a usable duration; else an error naming the model and its input. */
export function checked(ms: number, where: string, input: string): number {
  if (!Number.isFinite(ms) || ms < 0) throw new ModelOutputError(`${where}: the latency model gives ${ms} ms for ${input} (a duration must be finite and ≥ 0)`);
  return ms;
}

/** Σ x and Σ x² over a batch's items: the quadratic models (encoder, prefill) take a batch as both sums. */
export function sums<T>(items: Iterable<T>, of: (item: T) => number): { sum: number; squares: number } {
  let sum = 0;
  let squares = 0;
  for (const item of items) {
    const x = of(item);
    sum += x;
    squares += x * x;
  }
  return { sum, squares };
}

/** `squares`: Σ over the batch's items of their units² (one item of `units` when not given). */
export const encoderMs = (m: EncoderModel, units: number, where = 'encoder', squares = units * units) =>
  checked(m.a + m.b * units + (m.c ?? 0) * squares, where, `${units} units`);

/** LLM prompt tokens the embeddings of `units` encoder units become. */
export const llmTokensOf = (m: EncoderModel | undefined, units: number) => (m?.llmTokensPerUnit ? Math.ceil(units * m.llmTokensPerUnit) : units);

export const prefillMs = (m: LlmModel, sumTokens: number, sumSquares: number, where = 'llm.prefill') =>
  checked(m.prefill.a + m.prefill.b * sumTokens + m.prefill.c * sumSquares, where, `Σtokens ${sumTokens}, Σtokens² ${sumSquares}`);

export function decodeMs(m: LlmModel, sumContext: number, batch: number, where = 'llm.decode'): number {
  const d = m.decodeLarge && batch >= m.decodeLarge.from ? m.decodeLarge : m.decode;
  return checked(d.a + d.b * sumContext + d.c * batch, where, `Σcontext ${sumContext}, batch ${batch}`);
}

export const generatorMs = (m: GeneratorModel, batch: number, where = 'generator') => checked(m.steps * (m.perStep.a + m.perStep.b * batch), where, `batch ${batch}`);

/**
 * Probes every model over the range a run can reach, so a bad model is refused before the run (a model can
 * be fine at batch 1 and negative at batch 64, e.g. a fitted negative slope).
 */
export function probeModels(models: StageModels, where: string): void {
  if (models.encoder) for (const u of [0, 1, 256, 65_536]) encoderMs(models.encoder, u, `${where}.encoder`);
  if (models.llm) {
    const m = models.llm;
    for (const t of [1, m.maxPrefillTokens]) prefillMs(m, t, t * t, `${where}.llm.prefill`);
    // A quadratic with c > 0 and b < 0 dips between the ends (a noisy fit can: e.g. 58 − 0.45·S + 0.0023·Σt²), and
    // lower for a batch (Σt² ≥ S²/n for n sequences): probe the lowest point for one sequence and for a full batch.
    const p = m.prefill;
    for (const n of [1, m.maxBatch]) {
      prefillMs(m, m.maxPrefillTokens, (m.maxPrefillTokens * m.maxPrefillTokens) / n, `${where}.llm.prefill`);
      const low = p.c > 0 && p.b < 0 ? (-p.b * n) / (2 * p.c) : 0;
      if (low > 1 && low < m.maxPrefillTokens) prefillMs(m, low, (low * low) / n, `${where}.llm.prefill`);
    }
    for (const b of [1, m.maxBatch]) for (const ctx of [b, m.kvTokens]) decodeMs(m, ctx, b, `${where}.llm.decode`);
  }
  if (models.generator) for (const b of [1, models.generator.maxBatchSize ?? 64]) generatorMs(models.generator, b, `${where}.generator`);
  if (models.echo) checked(models.echo.a, `${where}.echo`, 'a request');
}
