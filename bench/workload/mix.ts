/**
 * Synthetic requests: a mix of modalities (`text:0.4,image:0.4,audio:0.2`), media sizes, and input/output
 * lengths drawn uniformly in [len·(1−r), len·(1+r)] as vLLM's random dataset does. A RequestSpec says what a
 * request is (sizes, lengths, a media seed), not its bytes, so the simulator can use it without making media;
 * `media.ts` turns it into bytes. Pure.
 */
import type { RandomSource } from './random.js';

export const KINDS = ['text', 'image', 'audio', 'video'] as const;
export type RequestKind = (typeof KINDS)[number];

export type Mix = Array<{ kind: RequestKind; weight: number }>;

export class WorkloadInputError extends Error {
  override readonly name = 'WorkloadInputError';
}

/** `text:0.4,image:0.4,audio:0.2` → weights normalised to sum 1. Unknown kinds, bad numbers, repeats → error. */
export function parseMix(text: string): Mix {
  const mix: Mix = [];
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^([a-z]+):([0-9]*\.?[0-9]+(?:e-?\d+)?)$/i.exec(part);
    if (!m) throw new WorkloadInputError(`--mix: '${part}' is not KIND:WEIGHT (e.g. text:0.4,image:0.6)`);
    const kind = m[1]!.toLowerCase() as RequestKind;
    if (!KINDS.includes(kind)) throw new WorkloadInputError(`--mix: unknown kind '${m[1]}' (one of ${KINDS.join(', ')})`);
    if (mix.some((x) => x.kind === kind)) throw new WorkloadInputError(`--mix: '${kind}' is given twice`);
    const weight = Number(m[2]);
    if (!Number.isFinite(weight)) throw new WorkloadInputError(`--mix: the weight of '${kind}' is not a finite number (${m[2]})`);
    mix.push({ kind, weight });
  }
  const total = mix.reduce((a, x) => a + x.weight, 0);
  if (mix.length === 0 || !(total > 0)) throw new WorkloadInputError(`--mix: '${text}' has no kind with a positive weight`);
  return mix.map((x) => ({ kind: x.kind, weight: x.weight / total }));
}

/** `1280x720` → {width, height}. */
export function parseSize(text: string, what = '--image-size'): { width: number; height: number } {
  const m = /^(\d+)x(\d+)$/.exec(text.trim());
  const width = Number(m?.[1]);
  const height = Number(m?.[2]);
  if (!m || width < 1 || height < 1 || width * height > 16_000_000) throw new WorkloadInputError(`${what}: '${text}' is not WIDTHxHEIGHT (e.g. 1280x720, at most 16 megapixels)`);
  return { width, height };
}

export interface MixOptions {
  mix: Mix;
  inputLen: number;
  outputLen: number;
  /** Lengths are uniform in [len·(1−rangeRatio), len·(1+rangeRatio)]; 0 = fixed. */
  rangeRatio: number;
  image: { width: number; height: number };
  audioSeconds: number;
  videoFrames: number;
}

/** Distinct media per kind and size in a run: enough variety, and each is made once (requests.ts caches). */
export const MEDIA_VARIANTS = 64;

export interface RequestSpec {
  index: number;
  kind: RequestKind;
  /** Prompt length asked for, in tokens (characters for the byte-level tiny models). */
  inputTokens: number;
  /** max_tokens, with ignore_eos so the server generates exactly this many. */
  outputTokens: number;
  /** Seeds this request's text and media. */
  mediaSeed: number;
  image?: { width: number; height: number };
  audioSeconds?: number;
  video?: { frames: number; width: number; height: number };
}

const lengthIn = (rng: RandomSource, len: number, ratio: number) =>
  Math.max(1, rng.int(Math.floor(len * (1 - ratio)), Math.ceil(len * (1 + ratio))));

/** The `index`-th synthetic request of a run (draws from `rng`, a stream of the mix's own). */
export function nextSpec(index: number, o: MixOptions, rng: RandomSource): RequestSpec {
  const kind = o.mix[rng.pick(o.mix.map((x) => x.weight))]!.kind;
  const spec: RequestSpec = {
    index,
    kind,
    inputTokens: lengthIn(rng, o.inputLen, o.rangeRatio),
    outputTokens: lengthIn(rng, o.outputLen, o.rangeRatio),
    mediaSeed: rng.int(0, MEDIA_VARIANTS - 1),
  };
  if (kind === 'image') spec.image = { ...o.image };
  if (kind === 'audio') spec.audioSeconds = o.audioSeconds;
  if (kind === 'video') spec.video = { frames: o.videoFrames, ...o.image };
  return spec;
}
