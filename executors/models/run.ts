/**
 * Direct runners over a LoadedModel: the "plain onnxruntime" path that tests and benchmarks use as a baseline,
 * and the functions Eric's and Geri's workers call after preprocessing. Encoders return one Embeddings
 * [tokens, hidden] per input item.
 */
import { modelErrors } from './errors.js';
import type { LoadedModel } from './loader.js';
import type { ImagePreprocessing } from './manifest.js';
import { type VisionInput, preprocessImage, preprocessImageNchw } from './preprocess/image.js';
import { preprocessVideo } from './preprocess/video.js';
import { preprocessAudio } from './preprocess/audio.js';
import type ort from 'onnxruntime-node';
import { type Embeddings, asMatrix, f32, i64, runSession } from './tensors.js';
import { encodeVisionRuns } from './vision-runs.js';
import type { MelFeatures } from './preprocess/mel.js';

export { type Embeddings, asMatrix, f32, i64, runSession } from './tensors.js';
export { generateImage, generateAudio, generateAudioOnce, type ImageGenOptions, type AudioGenOptions } from './generate.js';

/** Applies the model id's projector (if it has one) to features. */
export async function project(model: LoadedModel, modelId: string, features: Embeddings): Promise<Embeddings> {
  const spec = model.modelId(modelId);
  const proj = model.adapter(modelId, 'projector');
  const pg = spec.graphs.projector;
  if (!proj || !pg) return features;
  const out = await runSession(proj, { [pg.inputs[0]!.name]: f32(features.data, features.shape) }, `${modelId} projector`);
  return asMatrix(out[pg.outputs[0]!.name], `${modelId} projector`);
}

function imagePre(model: LoadedModel): ImagePreprocessing {
  const pre = model.manifest.preprocessing.image;
  if (!pre) throw modelErrors.unsupported(`model '${model.manifest.name}' has no image preprocessing`);
  return pre;
}

/**
 * Patches-layout vision encoder over several items at once, packed into runs (vision-runs.ts): a batch of N
 * items gives exactly the N single-item results.
 */
export async function runVision(model: LoadedModel, items: readonly VisionInput[], modelId: string): Promise<Embeddings[]> {
  model.modelId(modelId);
  if (items.length === 0) return [];
  const pre = imagePre(model);
  const enc = model.graph('encoder');
  const encOut = model.manifest.graphs.encoder!.outputs[0]!.name;
  if (enc.inputNames.includes('grid_thw')) {
    // A Hugging Face Qwen2-VL-style vision_encoder: one call per item, its patches and their grid.
    const out: Embeddings[] = [];
    for (const it of items) out.push(await project(model, modelId, asMatrix((await runSession(enc, qwen2VlFeeds(it), 'vision encoder'))[encOut], 'vision encoder')));
    return out;
  }
  const runs = { maxPatchesPerRun: pre.max_patches_per_run ?? Infinity, mergeSize: pre.merge_size };
  return (await encodeVisionRuns(items, runs, async (feeds) =>
    project(model, modelId, asMatrix((await runSession(enc, feeds, 'vision encoder'))[encOut], 'vision encoder'))))!;
}

/** A Qwen2-VL vision_encoder's inputs: `pixel_values [patches, patchDim]`, `grid_thw [1, 3]` (in patches). */
export function qwen2VlFeeds(item: VisionInput): Record<string, ort.Tensor> {
  const n = item.grid.t * item.grid.h * item.grid.w;
  return {
    pixel_values: f32(item.patches, [n, item.patchDim]),
    grid_thw: i64(BigInt64Array.from([item.grid.t, item.grid.h, item.grid.w], BigInt), [1, 3]),
  };
}

/** One encoded image → [tokens, hidden] (patches or nchw layout). */
export async function encodeImage(model: LoadedModel, bytes: Uint8Array, modelId: string): Promise<Embeddings> {
  const pre = imagePre(model);
  if (pre.layout === 'patches') return (await runVision(model, [await preprocessImage(bytes, pre)], modelId))[0]!;
  const { pixelValues, dims } = await preprocessImageNchw(bytes, pre);
  return runVisionNchw(model, pixelValues, dims, modelId);
}

/** A CLIP/SigLIP-style tower (nchw layout): fixed-size pixel_values [1, 3, H, W] → encoder → projector. */
export async function runVisionNchw(model: LoadedModel, pixelValues: Float32Array, dims: readonly number[], modelId: string): Promise<Embeddings> {
  model.modelId(modelId);
  const g = model.manifest.graphs.encoder!;
  const out = await runSession(model.graph('encoder'), { [g.inputs[0]!.name]: f32(pixelValues, dims) }, 'vision encoder');
  return project(model, modelId, asMatrix(out[g.outputs[0]!.name], 'vision encoder'));
}

/** Several images in one batch (patches layout). */
export async function encodeImages(model: LoadedModel, images: readonly Uint8Array[], modelId: string): Promise<Embeddings[]> {
  const pre = imagePre(model);
  return runVision(model, await Promise.all(images.map((b) => preprocessImage(b, pre))), modelId);
}

/** A video given as encoded frames → [(T/2)·(H/28)·(W/28), hidden]. */
export async function encodeVideo(model: LoadedModel, frames: readonly Uint8Array[], modelId: string): Promise<Embeddings> {
  const video = model.manifest.preprocessing.video;
  if (!video) throw modelErrors.unsupported(`model '${model.manifest.name}' does not take video`);
  return (await runVision(model, [await preprocessVideo(frames, imagePre(model), video)], modelId))[0]!;
}

/** Log-mel features → [frames', hidden]. */
export async function runAudio(model: LoadedModel, mel: MelFeatures, modelId: string): Promise<Embeddings> {
  model.modelId(modelId);
  const g = model.manifest.graphs.encoder!;
  // A batched graph input (Whisper's input_features [batch, n_mels, frames]) gets a batch of one.
  const dims = g.inputs[0]!.shape.length === 3 ? [1, mel.nMels, mel.frames] : [mel.nMels, mel.frames];
  const out = await runSession(model.graph('encoder'), { [g.inputs[0]!.name]: f32(mel.data, dims) }, 'audio encoder');
  return project(model, modelId, asMatrix(out[g.outputs[0]!.name], 'audio encoder'));
}

/** WAV bytes → [frames', hidden]. */
export async function encodeAudio(model: LoadedModel, wav: Uint8Array, modelId: string): Promise<Embeddings> {
  const pre = model.manifest.preprocessing.audio;
  if (!pre) throw modelErrors.unsupported(`model '${model.manifest.name}' does not take audio`);
  return runAudio(model, preprocessAudio(wav, pre), modelId);
}
