/**
 * Direct runners over a LoadedModel: the "plain onnxruntime" path that tests and benchmarks use as a baseline,
 * and the functions Eric's and Geri's workers call after preprocessing. Encoders return one Embeddings
 * [tokens, hidden] per input item.
 */
import type ort from 'onnxruntime-node';
import { modelErrors } from './errors.js';
import type { LoadedModel } from './loader.js';
import type { ImagePreprocessing } from './manifest.js';
import { type VisionInput, preprocessImage, preprocessImageNchw } from './preprocess/image.js';
import { preprocessVideo } from './preprocess/video.js';
import { preprocessAudio } from './preprocess/audio.js';
import { type Embeddings, asMatrix, f32, i64, runSession } from './tensors.js';
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

/** Encoder feeds for one item run alone (all its temporal groups as separate attention segments). */
export function visionFeeds(item: VisionInput): Record<string, ort.Tensor> {
  const n = item.grid.t * item.grid.h * item.grid.w;
  const seg = new BigInt64Array(n);
  for (let t = 0; t < item.grid.t; t++) seg.fill(BigInt(t), t * item.grid.h * item.grid.w, (t + 1) * item.grid.h * item.grid.w);
  return {
    patches: f32(item.patches, [n, item.patchDim]), position_ids: i64(item.positionIds, [n, 2]), segment_ids: i64(seg, [n]),
  };
}

/**
 * Patches-layout vision encoder over several items at once. Each temporal group of each item is one attention
 * segment; consecutive segments are packed into runs of at most max_patches_per_run patches (block-diagonal
 * attention via segment_ids), so a batch of N items gives exactly the N single-item results.
 */
export async function runVision(model: LoadedModel, items: readonly VisionInput[], modelId: string): Promise<Embeddings[]> {
  model.modelId(modelId);
  if (items.length === 0) return [];
  const pre = imagePre(model);
  const enc = model.graph('encoder');
  const encOut = model.manifest.graphs.encoder!.outputs[0]!.name;
  const patchDim = items[0]!.patchDim;
  const maxRun = pre.max_patches_per_run ?? Infinity;
  const segs: { item: number; t: number; n: number }[] = [];
  items.forEach((it, i) => {
    if (it.patchDim !== patchDim) throw modelErrors.invalid('items in one batch must have the same patch size');
    for (let t = 0; t < it.grid.t; t++) segs.push({ item: i, t, n: it.grid.h * it.grid.w });
  });
  const perItem: Float32Array[][] = items.map(() => []);
  let hidden = 0;
  for (let s = 0; s < segs.length;) {
    let e = s;
    let total = 0;
    while (e < segs.length && (e === s || total + segs[e]!.n <= maxRun)) total += segs[e++]!.n;
    const patches = new Float32Array(total * patchDim);
    const pos = new BigInt64Array(total * 2);
    const segIds = new BigInt64Array(total);
    let o = 0;
    for (let k = s; k < e; k++) {
      const { item, t, n } = segs[k]!;
      const src = items[item]!;
      patches.set(src.patches.subarray(t * n * patchDim, (t + 1) * n * patchDim), o * patchDim);
      pos.set(src.positionIds.subarray(t * n * 2, (t + 1) * n * 2), o * 2);
      segIds.fill(BigInt(k - s), o, o + n);
      o += n;
    }
    const out = await runSession(enc, {
      patches: f32(patches, [total, patchDim]), position_ids: i64(pos, [total, 2]), segment_ids: i64(segIds, [total]),
    }, 'vision encoder');
    const emb = await project(model, modelId, asMatrix(out[encOut], 'vision encoder'));
    hidden = emb.shape[1];
    let row = 0;
    for (let k = s; k < e; k++) {
      const rows = segs[k]!.n / pre.merge_size ** 2;
      perItem[segs[k]!.item]!.push(emb.data.subarray(row * hidden, (row + rows) * hidden));
      row += rows;
    }
    s = e;
  }
  return perItem.map((parts) => {
    const data = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
    let o = 0;
    for (const p of parts) { data.set(p, o); o += p.length; }
    return { data, shape: [data.length / hidden, hidden] };
  });
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
  const out = await runSession(model.graph('encoder'), { [g.inputs[0]!.name]: f32(mel.data, [mel.nMels, mel.frames]) }, 'audio encoder');
  return project(model, modelId, asMatrix(out[g.outputs[0]!.name], 'audio encoder'));
}

/** WAV bytes → [frames', hidden]. */
export async function encodeAudio(model: LoadedModel, wav: Uint8Array, modelId: string): Promise<Embeddings> {
  const pre = model.manifest.preprocessing.audio;
  if (!pre) throw modelErrors.unsupported(`model '${model.manifest.name}' does not take audio`);
  return runAudio(model, preprocessAudio(wav, pre), modelId);
}
