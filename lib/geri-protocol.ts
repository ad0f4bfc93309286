/**
 * What Geri's router, engine and worker put in the common protocol's items (executors/common/PROTOCOL.md):
 *   item   {id, meta: GenParams, tensors: {embeddings: float32 [rows, hidden]}}   one HTTP request = one item
 *   image  result tensors {png: uint8 [bytes]}
 *   audio  stream events {pcm16: uint8 [bytes]} per chunk (in order), then a result with meta {chunks}
 * Every result's meta carries `batchSize` (how many requests ran together).
 */
import { z } from 'zod';

export const ImageParams = z.object({
  kind: z.literal('image'),
  height: z.number().int().positive(),
  width: z.number().int().positive(),
  numInferenceSteps: z.number().int().positive(),
  skipTokens: z.number().int().nonnegative(),
});
export type ImageParams = z.infer<typeof ImageParams>;

export const AudioParams = z.object({
  kind: z.literal('audio'),
  /** Absent = the model's default (absent ≠ an explicit default when batching, as in the reference). */
  chunkSize: z.number().int().positive().optional(),
  leftContextSize: z.number().int().nonnegative().optional(),
  /** Set by the router for one segment of a stream of embeddings: rows before it are left context only. */
  startFrame: z.number().int().nonnegative().optional(),
});
export type AudioParams = z.infer<typeof AudioParams>;

export const GenParams = z.discriminatedUnion('kind', [ImageParams, AudioParams]);
export type GenParams = z.infer<typeof GenParams>;

export type Modality = GenParams['kind'];
export const MODALITIES = ['image', 'audio'] as const satisfies readonly Modality[];

/** Tensor names on the links. */
export const EMBEDDINGS = 'embeddings';
export const PNG = 'png';
export const PCM16 = 'pcm16';

/**
 * Whether two requests may run in one batch (the reference's `requests_compatible`): image requests with the
 * same height, width and steps (skip_tokens may differ); audio requests with the same chunk and context sizes.
 */
export function compatible(a: GenParams, b: GenParams): boolean {
  if (a.kind === 'image' && b.kind === 'image') return a.height === b.height && a.width === b.width && a.numInferenceSteps === b.numInferenceSteps;
  if (a.kind === 'audio' && b.kind === 'audio') return a.chunkSize === b.chunkSize && a.leftContextSize === b.leftContextSize;
  return false;
}

/**
 * Float samples in [-1, 1] → 16-bit signed little-endian PCM (clamped, scaled by 32767, rounded half up as
 * Math.round; NaN → 0). Every sample of every chunk passes here, so the loop avoids the Math.min / max / round
 * calls (3× faster, same bits): floor(v + 0.5) is Math.round for the finite values the clamp leaves.
 */
export function toPcm16(samples: Float32Array): Uint8Array {
  const n = samples.length;
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    const x = samples[i]!;
    out[i] = Math.floor((x > 1 ? 1 : x < -1 ? -1 : x) * 32767 + 0.5);
  }
  return new Uint8Array(out.buffer);
}
