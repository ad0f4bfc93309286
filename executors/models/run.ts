/**
 * Direct runners over a LoadedModel: the "plain onnxruntime" path that tests and benchmarks use as a baseline,
 * and the functions Eric's and Geri's workers call after preprocessing. Encoders return one Embeddings
 * [tokens, hidden] per input item.
 */
import { modelErrors } from './errors.js';
import type { LoadedModel, Session } from './loader.js';
import type { ImagePreprocessing } from './manifest.js';
import { type VisionInput, preprocessImage, preprocessImageNchw } from './preprocess/image.js';
import { preprocessVideo } from './preprocess/video.js';
import { preprocessAudio } from './preprocess/audio.js';
import type ort from 'onnxruntime-node';
import { type Embeddings, asMatrix, f32, i64, matrixShape, runSession } from './tensors.js';
import { encodeVisionRuns } from './vision-runs.js';
import type { MelFeatures } from './preprocess/mel.js';

export { type Embeddings, asMatrix, f32, i64, runSession } from './tensors.js';
export { generateImage, generateAudio, generateAudioOnce, type ImageGenOptions, type AudioGenOptions } from './generate.js';

/**
 * Where a projector's output goes: called with its [tokens, hidden] before the run, it returns a view of exactly
 * tokens·hidden floats that onnxruntime fills in place (e.g. sidecar shared memory: the forwarded embedding is
 * never copied), or undefined to let onnxruntime allocate as usual.
 */
export type OutputPlacement = (shape: [number, number]) => Promise<Float32Array | undefined>;

/**
 * Applies the model id's projector (if it has one) to features. With `into`, and when the graph fixes its output
 * dims from the input's (every dim a number or a symbol the input names), the output is written into the view
 * `into` gives and the result's data IS that view; otherwise `into` is not called.
 */
export async function project(model: LoadedModel, modelId: string, features: Embeddings, into?: OutputPlacement): Promise<Embeddings> {
  const spec = model.modelId(modelId);
  const proj = model.adapter(modelId, 'projector');
  const pg = spec.graphs.projector;
  if (!proj || !pg) return features;
  const what = `${modelId} projector`;
  const [input, output] = [pg.inputs[0]!.name, pg.outputs[0]!.name];
  const feeds = { [input]: f32(features.data, features.shape) };
  const dims = into && outputDims(proj, input, output, features.shape);
  const shape = dims && matrixShape(dims);
  const view = shape && await into!(shape);
  if (!view) return asMatrix((await runSession(proj, feeds, what))[output], what);
  if (view.length !== shape[0] * shape[1]) throw new Error(`${what}: the output placement gave ${view.length} floats for [${shape.join(', ')}]`);
  await runSession(proj, feeds, what, { [output]: f32(view, dims) });
  return { data: view, shape };
}

/**
 * A float32 output's dims for features of `shape`, from the graph's own metadata: a number is fixed, a symbol the
 * input names takes the size fed there (the projector's `tokens`). Undefined when any dim is unknown up front.
 */
function outputDims(s: Session, input: string, output: string, shape: readonly number[]): number[] | undefined {
  const inMeta = s.inputMetadata.find((m) => m.name === input);
  const outMeta = s.outputMetadata.find((m) => m.name === output);
  if (!inMeta?.isTensor || !outMeta?.isTensor || outMeta.type !== 'float32' || inMeta.shape.length !== shape.length || !outMeta.shape.length) return undefined;
  const fed = new Map<string, number>();
  inMeta.shape.forEach((d, i) => { if (typeof d === 'string' && d) fed.set(d, shape[i]!); });
  const dims = outMeta.shape.map((d) => (typeof d === 'number' ? (d > 0 ? d : undefined) : fed.get(d)));
  return dims.every((d) => d !== undefined) ? dims as number[] : undefined;
}

function imagePre(model: LoadedModel): ImagePreprocessing {
  const pre = model.manifest.preprocessing.image;
  if (!pre) throw modelErrors.unsupported(`model '${model.manifest.name}' has no image preprocessing`);
  return pre;
}

/**
 * Patches-layout vision encoder over several items at once, packed into runs (vision-runs.ts): a batch of N
 * items gives exactly the N single-item results. The projector then runs once per item (it maps an item's
 * tokens; per item, never across two items of a run), so `places[i]` can place item i's output (see project).
 */
export async function runVision(
  model: LoadedModel, items: readonly VisionInput[], modelId: string, places?: readonly (OutputPlacement | undefined)[],
): Promise<Embeddings[]> {
  model.modelId(modelId);
  if (items.length === 0) return [];
  const pre = imagePre(model);
  const enc = model.graph('encoder');
  const encOut = model.manifest.graphs.encoder!.outputs[0]!.name;
  const encode = async (feeds: Record<string, ort.Tensor>) => asMatrix((await runSession(enc, feeds, 'vision encoder'))[encOut], 'vision encoder');
  // A Hugging Face Qwen2-VL-style vision_encoder: one call per item, its patches and their grid.
  const features = enc.inputNames.includes('grid_thw')
    ? await sequential(items, (it) => encode(qwen2VlFeeds(it)))
    : (await encodeVisionRuns(items, { maxPatchesPerRun: pre.max_patches_per_run ?? Infinity, mergeSize: pre.merge_size }, encode))!;
  return sequential(features, (f, i) => project(model, modelId, f, places?.[i]));
}

/** Runs `f` over `xs` one after another (one session run at a time, as the worker's single thread wants). */
async function sequential<T, R>(xs: readonly T[], f: (x: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (const [i, x] of xs.entries()) out.push(await f(x, i));
  return out;
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
export async function runVisionNchw(
  model: LoadedModel, pixelValues: Float32Array, dims: readonly number[], modelId: string, into?: OutputPlacement,
): Promise<Embeddings> {
  model.modelId(modelId);
  const g = model.manifest.graphs.encoder!;
  const out = await runSession(model.graph('encoder'), { [g.inputs[0]!.name]: f32(pixelValues, dims) }, 'vision encoder');
  return project(model, modelId, asMatrix(out[g.outputs[0]!.name], 'vision encoder'), into);
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

/** Log-mel features → [frames', hidden] (`into`: see project). */
export async function runAudio(model: LoadedModel, mel: MelFeatures, modelId: string, into?: OutputPlacement): Promise<Embeddings> {
  model.modelId(modelId);
  const g = model.manifest.graphs.encoder!;
  // A batched graph input (Whisper's input_features [batch, n_mels, frames]) gets a batch of one.
  const dims = g.inputs[0]!.shape.length === 3 ? [1, mel.nMels, mel.frames] : [mel.nMels, mel.frames];
  const out = await runSession(model.graph('encoder'), { [g.inputs[0]!.name]: f32(mel.data, dims) }, 'audio encoder');
  return project(model, modelId, asMatrix(out[g.outputs[0]!.name], 'audio encoder'), into);
}

/** WAV bytes → [frames', hidden]. */
export async function encodeAudio(model: LoadedModel, wav: Uint8Array, modelId: string): Promise<Embeddings> {
  const pre = model.manifest.preprocessing.audio;
  if (!pre) throw modelErrors.unsupported(`model '${model.manifest.name}' does not take audio`);
  return runAudio(model, preprocessAudio(wav, pre), modelId);
}
