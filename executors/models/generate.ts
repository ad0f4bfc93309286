/**
 * Generator runners. Image: prior once, then `numInferenceSteps` denoise steps (one session.run each, in this
 * TS loop), then the decoder; PNG via sharp. Audio: the vocoder over chunks of chunk_size frames with up to
 * left_context_size frames of context (the context's samples are dropped), yielded as they are made.
 */
import sharp from 'sharp';
import { modelErrors } from './errors.js';
import type { LoadedModel } from './loader.js';
import { Prng } from './onnx/prng.js';
import { type Embeddings, f32, i64, runSession } from './tensors.js';

function checkEmbeddings(model: LoadedModel, emb: Embeddings): void {
  const hidden = Object.values(model.manifest.model_ids)[0]!.hidden_size;
  if (emb.shape[1] !== hidden) throw modelErrors.invalid(`embeddings have hidden size ${emb.shape[1]}; model '${model.manifest.name}' takes ${hidden}`);
  if (emb.shape[0] < 1) throw modelErrors.invalid('embeddings are empty');
  if (emb.data.length !== emb.shape[0] * emb.shape[1]) throw modelErrors.invalid('embeddings data does not match their shape');
}

export interface ImageGenOptions {
  height: number;
  width: number;
  numInferenceSteps?: number;
  /** Seed of the initial latent noise (default 0). */
  seed?: number;
  /** Leading embedding rows to ignore (Geri's skip_tokens). */
  skipTokens?: number;
}

/** Standard normal noise from a seeded stream (Box-Muller). */
function noise(n: number, seed: number): Float32Array {
  const rng = new Prng(seed ^ 0x9e3779b9);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i += 2) {
    const u = Math.max(rng.next(), 1e-12);
    const v = rng.next();
    const r = Math.sqrt(-2 * Math.log(u));
    out[i] = r * Math.cos(2 * Math.PI * v);
    if (i + 1 < n) out[i + 1] = r * Math.sin(2 * Math.PI * v);
  }
  return out;
}

export async function generateImage(model: LoadedModel, embeddings: Embeddings, o: ImageGenOptions): Promise<{ png: Buffer; rgb: Float32Array }> {
  const gen = model.manifest.generation.image;
  if (!gen) throw modelErrors.unsupported(`model '${model.manifest.name}' is not an image generator`);
  const steps = o.numInferenceSteps ?? gen.default_steps;
  const { height: H, width: W } = o;
  for (const [k, v] of [['height', H], ['width', W], ['num_inference_steps', steps]] as const) {
    if (!Number.isInteger(v) || v < 1) throw modelErrors.invalid(`${k} must be a positive integer, got ${v}`);
  }
  if (H > gen.max_height || W > gen.max_width) throw modelErrors.tooLarge(`image ${W}x${H} exceeds ${gen.max_width}x${gen.max_height}`);
  if (steps > gen.max_steps) throw modelErrors.tooLarge(`num_inference_steps ${steps} exceeds ${gen.max_steps}`);
  const skip = o.skipTokens ?? 0;
  const emb: Embeddings = skip ? { data: embeddings.data.subarray(skip * embeddings.shape[1]), shape: [embeddings.shape[0] - skip, embeddings.shape[1]] } : embeddings;
  checkEmbeddings(model, emb);

  const c = gen.latent_channels;
  const lh = Math.ceil(H / gen.latent_downsample);
  const lw = Math.ceil(W / gen.latent_downsample);
  const prior = await runSession(model.graph('prior'), {
    embeddings: f32(emb.data, emb.shape), latent_sizes: i64(BigInt64Array.from([1n, BigInt(c), BigInt(lh), BigInt(lw)]), [4]),
  }, 'image prior');
  const condLatent = prior.cond_latent!;
  const cond = prior.cond!;
  let latent = f32(noise(c * lh * lw, o.seed ?? 0), [1, c, lh, lw]);
  const denoise = model.graph('denoise');
  for (let s = 0; s < steps; s++) {
    const out = await runSession(denoise, {
      latent, cond_latent: condLatent, cond,
      timestep: f32(Float32Array.of(1 - s / steps), [1]), step_scale: f32(Float32Array.of(1 / (steps - s)), [1]),
    }, `denoise step ${s}`);
    latent = out.next_latent as typeof latent;
  }
  const dec = await runSession(model.graph('decoder'), {
    latent, image_sizes: i64(BigInt64Array.from([1n, 3n, BigInt(H), BigInt(W)]), [4]),
  }, 'image decoder');
  const rgb = dec.image!.data as Float32Array; // [1, 3, H, W] in [0, 1]
  const hwc = Buffer.alloc(H * W * 3);
  for (let ch = 0; ch < 3; ch++) {
    for (let i = 0; i < H * W; i++) hwc[i * 3 + ch] = Math.round(Math.min(1, Math.max(0, rgb[ch * H * W + i]!)) * 255);
  }
  const png = await sharp(hwc, { raw: { width: W, height: H, channels: 3 } }).png().toBuffer();
  return { png, rgb };
}

export interface AudioGenOptions {
  chunkSize?: number;
  leftContextSize?: number;
  /**
   * Rows before this one are left context only (no audio is made for them): chunks start here. A stream of
   * embeddings is vocoded segment by segment this way, with the same windows as one run over all rows.
   * @default 0
   */
  startFrame?: number;
}

async function vocode(model: LoadedModel, emb: Embeddings, from: number, to: number): Promise<Float32Array> {
  const h = emb.shape[1];
  const out = await runSession(model.graph('vocoder'), {
    embeddings: f32(emb.data.subarray(from * h, to * h), [to - from, h]),
  }, 'vocoder');
  return out.waveform!.data as Float32Array;
}

/** Yields float32 waveform chunks in [-1, 1] at generation.audio.sample_rate, chunk_size frames at a time. */
export async function* generateAudio(model: LoadedModel, embeddings: Embeddings, o: AudioGenOptions = {}): AsyncGenerator<Float32Array> {
  const gen = model.manifest.generation.audio;
  if (!gen) throw modelErrors.unsupported(`model '${model.manifest.name}' is not an audio generator`);
  checkEmbeddings(model, embeddings);
  const chunk = o.chunkSize ?? gen.default_chunk_size;
  const ctx = o.leftContextSize ?? gen.default_left_context_size;
  if (!Number.isInteger(chunk) || chunk < 1) throw modelErrors.invalid(`chunk_size must be a positive integer, got ${chunk}`);
  if (!Number.isInteger(ctx) || ctx < 0) throw modelErrors.invalid(`left_context_size must be a non-negative integer, got ${ctx}`);
  const frames = embeddings.shape[0];
  const first = o.startFrame ?? 0;
  if (!Number.isInteger(first) || first < 0 || first > frames) throw modelErrors.invalid(`startFrame must be an integer in [0, ${frames}], got ${first}`);
  for (let start = first; start < frames; start += chunk) {
    const from = Math.max(0, start - ctx);
    const wave = await vocode(model, embeddings, from, Math.min(frames, start + chunk));
    yield wave.subarray((start - from) * gen.samples_per_frame);
  }
}

/** The whole waveform in one run. */
export async function generateAudioOnce(model: LoadedModel, embeddings: Embeddings): Promise<Float32Array> {
  checkEmbeddings(model, embeddings);
  return vocode(model, embeddings, 0, embeddings.shape[0]);
}
