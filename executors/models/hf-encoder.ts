/**
 * Encoders from Hugging Face folders served through the manifest machinery: the folder's config.json and
 * preprocessor_config.json become the Manifest that loader.ts, run.ts and Eric already use, for the model ids the
 * folder is served under. No projector in either case:
 *  - CLIP/SigLIP `vision_model.onnx` towers: an `nchw` image encoder with PIL-compatible preprocessing steps;
 *  - a split VLM's `vision_encoder.onnx` (Qwen2-VL style): a `patches` image encoder (Qwen2VLImageProcessor:
 *    resize to multiples of patch × merge within min / max pixels, normalise, patchify), fed `pixel_values` +
 *    `grid_thw` (run.ts), whose merger already outputs the text hidden size.
 */
import { join } from 'node:path';
import { z } from 'zod';
import { modelErrors } from './errors.js';
import { type HfFolder, decoderGeometry, inspectHfFolder, partFile, readOptionalJson } from './hf-folder.js';
import { type ImagePreprocessing, Manifest, describeIssues } from './manifest.js';
import { PIL_RESAMPLE } from './preprocess/pil-resize.js';
import { loadManifest } from './loader.js';
import { MANIFEST_FILE } from './manifest.js';
import { stat } from 'node:fs/promises';

export const PREPROCESSOR_FILE = 'preprocessor_config.json';

const size = z.object({ height: z.number().int().positive(), width: z.number().int().positive() });
const rgb = z.array(z.number()).length(3).transform((v) => v as [number, number, number]);

/** The fields of CLIPImageProcessor / SiglipImageProcessor that decide pixel_values (transformers' defaults). */
const ImageProcessorConfig = z.object({
  do_resize: z.boolean().default(true),
  size: z.union([z.object({ shortest_edge: z.number().int().positive() }), size, z.number().int().positive()]),
  resample: z.number().int().default(3),
  do_center_crop: z.boolean().default(false),
  crop_size: z.union([size, z.number().int().positive()]).optional(),
  do_rescale: z.boolean().default(true),
  rescale_factor: z.number().positive().default(1 / 255),
  do_normalize: z.boolean().default(true),
  image_mean: rgb.default([0.5, 0.5, 0.5]),
  image_std: rgb.default([0.5, 0.5, 0.5]),
});

const square = (v: number | { height: number; width: number }) => (typeof v === 'number' ? { height: v, width: v } : v);

/** preprocessor_config.json → the manifest's nchw image preprocessing; errors name the file and field. */
export function imagePreprocessing(raw: Record<string, unknown>, where: string, patchSize: number): ImagePreprocessing {
  const r = ImageProcessorConfig.safeParse(raw);
  if (!r.success) throw modelErrors.manifestInvalid(`${where}: ${describeIssues(r.error)}`);
  const c = r.data;
  const resample = PIL_RESAMPLE[c.resample];
  if (!resample) throw modelErrors.unsupported(`${where}: resample ${c.resample} is not supported (2 = bilinear, 3 = bicubic)`);
  const resize = typeof c.size === 'number' ? square(c.size) : c.size;
  if (c.do_center_crop && !c.crop_size) throw modelErrors.manifestInvalid(`${where}: crop_size: required when do_center_crop is true`);
  const crop = c.do_center_crop ? square(c.crop_size!) : undefined;
  // The model's input size: the crop, else an exact resize; a shortest-edge resize without a crop has no fixed size.
  const imageSize = crop ?? (c.do_resize && 'height' in resize ? resize : undefined);
  if (!imageSize) throw modelErrors.unsupported(`${where}: pixel_values have no fixed size (shortest_edge resize without center crop)`);
  return {
    layout: 'nchw', patch_size: patchSize, temporal_patch_size: 1, merge_size: 1, image_size: imageSize, mean: c.image_mean, std: c.image_std,
    pil: {
      ...(c.do_resize ? { resize } : {}), resample, ...(crop ? { center_crop: crop } : {}),
      ...(c.do_rescale ? { rescale_factor: c.rescale_factor } : {}), normalize: c.do_normalize,
    },
  };
}

/** The output Eric serves per family: the pooled, projected embedding ([1, dim]). */
const TOWER_OUTPUT: Record<string, { output: string; dim: (c: Record<string, unknown>, v: Record<string, unknown>) => unknown }> = {
  clip: { output: 'image_embeds', dim: (c, v) => c.projection_dim ?? v.projection_dim },
  siglip: { output: 'pooler_output', dim: (_c, v) => v.hidden_size },
};

/** Qwen2VLImageProcessor's fields (older exports: min_pixels / max_pixels; newer: size.shortest_edge / longest_edge). */
const Qwen2VlProcessorConfig = z.object({
  patch_size: z.number().int().positive(),
  temporal_patch_size: z.number().int().positive(),
  merge_size: z.number().int().positive(),
  min_pixels: z.number().int().positive().optional(),
  max_pixels: z.number().int().positive().optional(),
  size: z.object({ shortest_edge: z.number().int().positive(), longest_edge: z.number().int().positive() }).partial().optional(),
  image_mean: rgb,
  image_std: rgb,
  rescale_factor: z.number().positive().default(1 / 255),
});

/** A split VLM's vision_encoder as a Manifest serving `modelIds` (image embeddings of the text hidden size). */
async function vlmEncoderManifest(folder: HfFolder, modelIds: readonly string[]): Promise<Manifest> {
  const where = join(folder.dir, PREPROCESSOR_FILE);
  const raw = await readOptionalJson(where);
  if (!raw) throw modelErrors.manifestMismatch(`${folder.dir}: a vlm's vision encoder needs ${PREPROCESSOR_FILE}`);
  const r = Qwen2VlProcessorConfig.safeParse(raw);
  if (!r.success) throw modelErrors.manifestInvalid(`${where}: ${describeIssues(r.error)}`);
  const c = r.data;
  if (Math.abs(c.rescale_factor - 1 / 255) > 1e-9) throw modelErrors.unsupported(`${where}: rescale_factor ${c.rescale_factor} is not supported (1/255)`);
  const minPixels = c.min_pixels ?? c.size?.shortest_edge;
  const maxPixels = c.max_pixels ?? c.size?.longest_edge;
  if (!minPixels || !maxPixels) throw modelErrors.manifestInvalid(`${where}: min_pixels and max_pixels (or size.shortest_edge / longest_edge) are required`);
  const hidden = decoderGeometry(folder).hidden;
  const patchDim = 3 * c.temporal_patch_size * c.patch_size * c.patch_size;
  return Manifest.parse({
    schema_version: 1, name: folder.name, family: 'vision-encoder', modalities: ['image'], dtype: 'float32',
    graphs: {
      encoder: {
        file: partFile(folder, 'vision').slice(folder.dir.length + 1),
        inputs: [
          { name: 'pixel_values', dtype: 'float32', shape: ['num_patches', patchDim] },
          { name: 'grid_thw', dtype: 'int64', shape: ['num_images', 3] },
        ],
        outputs: [{ name: 'image_features', dtype: 'float32', shape: ['num_tokens', hidden] }],
      },
    },
    model_ids: Object.fromEntries(modelIds.map((id) => [id, { hidden_size: hidden }])),
    preprocessing: {
      image: {
        layout: 'patches', patch_size: c.patch_size, temporal_patch_size: c.temporal_patch_size, merge_size: c.merge_size,
        min_pixels: minPixels, max_pixels: maxPixels, mean: c.image_mean, std: c.image_std,
      },
    },
    config: { hugging_face: { model_type: folder.modelType } },
  });
}

/** WhisperFeatureExtractor fields (transformers' defaults). */
const WhisperFeatureConfig = z.object({
  feature_size: z.number().int().positive().default(80),
  sampling_rate: z.number().int().positive().default(16000),
  hop_length: z.number().int().positive().default(160),
  n_fft: z.number().int().positive().default(400),
  chunk_length: z.number().int().positive().default(30),
});

/** A Whisper-style `encoder_model.onnx` as a Manifest serving `modelIds`: input_features [1, n_mels, frames] → last_hidden_state. */
async function audioEncoderManifest(folder: HfFolder, modelIds: readonly string[]): Promise<Manifest> {
  if (folder.modelType !== 'whisper') throw modelErrors.unsupported(`${folder.dir}: audio encoder model_type '${folder.modelType}' is not supported (whisper)`);
  const where = join(folder.dir, PREPROCESSOR_FILE);
  const raw = await readOptionalJson(where);
  if (!raw) throw modelErrors.manifestMismatch(`${folder.dir}: an audio encoder needs ${PREPROCESSOR_FILE}`);
  const r = WhisperFeatureConfig.safeParse(raw);
  if (!r.success) throw modelErrors.manifestInvalid(`${where}: ${describeIssues(r.error)}`);
  const c = r.data;
  const dim = folder.config.d_model;
  if (typeof dim !== 'number') throw modelErrors.manifestInvalid(`${join(folder.dir, 'config.json')}: d_model: must be a number`);
  const frames = (c.chunk_length * c.sampling_rate) / c.hop_length;
  return Manifest.parse({
    schema_version: 1, name: folder.name, family: 'audio-encoder', modalities: ['audio'], dtype: 'float32',
    graphs: {
      encoder: {
        file: partFile(folder, 'audio_encoder').slice(folder.dir.length + 1),
        inputs: [{ name: 'input_features', dtype: 'float32', shape: ['batch_size', c.feature_size, frames] }],
        outputs: [{ name: 'last_hidden_state', dtype: 'float32', shape: ['batch_size', 'encoder_sequence_length', dim] }],
      },
    },
    model_ids: Object.fromEntries(modelIds.map((id) => [id, { hidden_size: dim }])),
    preprocessing: {
      audio: {
        sample_rate: c.sampling_rate, n_mels: c.feature_size, n_fft: c.n_fft, win_length: c.n_fft, hop_length: c.hop_length, window: 'hann',
        fmin: 0, fmax: c.sampling_rate / 2, max_seconds: c.chunk_length, whisper: { chunk_length: c.chunk_length },
      },
    },
    config: { hugging_face: { model_type: folder.modelType } },
  });
}

/** A vision-tower, split-VLM or Whisper-encoder folder as a Manifest serving `modelIds` (each id = the same encoder, no projector). */
export async function hfEncoderManifest(folder: HfFolder, modelIds: readonly string[]): Promise<Manifest> {
  if (folder.kind === 'vlm') return vlmEncoderManifest(folder, modelIds);
  if (folder.kind === 'audio-encoder') return audioEncoderManifest(folder, modelIds);
  if (folder.kind !== 'vision-tower') {
    throw modelErrors.unsupported(`${folder.dir} is a ${folder.kind} folder; Eric serves vision-tower folders (CLIP/SigLIP vision_model.onnx) and split VLMs' vision_encoder.onnx`);
  }
  const family = TOWER_OUTPUT[folder.modelType.replace(/_vision_model$/, '')];
  if (!family) throw modelErrors.unsupported(`${folder.dir}: vision tower model_type '${folder.modelType}' is not supported (clip, siglip)`);
  const vision = (folder.config.vision_config as Record<string, unknown> | undefined) ?? folder.config;
  const dim = family.dim(folder.config, vision);
  const patch = vision.patch_size;
  if (typeof dim !== 'number' || typeof patch !== 'number') {
    throw modelErrors.manifestInvalid(`${join(folder.dir, 'config.json')}: vision_config.patch_size and the embedding size (${folder.modelType === 'clip' ? 'projection_dim' : 'vision_config.hidden_size'}) must be numbers`);
  }
  const where = join(folder.dir, PREPROCESSOR_FILE);
  const raw = await readOptionalJson(where);
  if (!raw) throw modelErrors.manifestMismatch(`${folder.dir}: a vision tower needs ${PREPROCESSOR_FILE}`);
  const image = imagePreprocessing(raw, where, patch);
  const { height, width } = image.image_size!;
  const file = partFile(folder, 'vision').slice(folder.dir.length + 1);
  return Manifest.parse({
    schema_version: 1, name: folder.name, family: 'vision-encoder', modalities: ['image'], dtype: 'float32',
    graphs: {
      encoder: {
        file,
        inputs: [{ name: 'pixel_values', dtype: 'float32', shape: ['batch_size', 3, height, width] }],
        outputs: [{ name: family.output, dtype: 'float32', shape: ['batch_size', dim] }],
      },
    },
    model_ids: Object.fromEntries(modelIds.map((id) => [id, { hidden_size: dim }])),
    preprocessing: { image },
    config: { hugging_face: { model_type: folder.modelType } },
  });
}

/** The manifest of an encoder folder of either layout: manifest.json, else a Hugging Face vision tower or VLM serving `modelIds`. */
export async function encoderManifest(dir: string, modelIds: readonly string[]): Promise<Manifest> {
  if (await stat(join(dir, MANIFEST_FILE)).then(() => true, () => false)) return loadManifest(dir);
  return hfEncoderManifest(await inspectHfFolder(dir), modelIds);
}
