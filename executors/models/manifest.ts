/**
 * manifest.json: what a model folder holds and how to feed it. This schema is the contract between the
 * model builders, the loader, and the executors (Eric, Geri, LLM). Hand-written manifests for real exported
 * models (e.g. a CLIP/SigLIP vision tower) use the same schema.
 */
import { z } from 'zod';

export const MANIFEST_FILE = 'manifest.json';

const dim = z.union([z.number().int().nonnegative(), z.string().min(1)]);

export const TensorSpec = z.object({
  name: z.string().min(1),
  dtype: z.enum(['float32', 'int64', 'int32', 'uint8', 'bool']),
  /** Numbers are fixed sizes, strings are named dynamic dims. */
  shape: z.array(dim),
});
export type TensorSpec = z.infer<typeof TensorSpec>;

const relativeFile = z
  .string()
  .min(1)
  .refine((f) => !f.startsWith('/') && !f.split(/[\\/]/).includes('..'), 'must be a relative path inside the model folder');

export const GraphSpec = z.object({
  file: relativeFile,
  inputs: z.array(TensorSpec).min(1),
  outputs: z.array(TensorSpec).min(1),
});
export type GraphSpec = z.infer<typeof GraphSpec>;

/** One served model id: its output hidden size and its own adapter graphs (e.g. `projector`). */
export const ModelIdSpec = z.object({
  hidden_size: z.number().int().positive(),
  graphs: z.record(z.string(), GraphSpec).default({}),
});
export type ModelIdSpec = z.infer<typeof ModelIdSpec>;

const rgb = z.tuple([z.number(), z.number(), z.number()]);

const size2d = z.object({ height: z.number().int().positive(), width: z.number().int().positive() });

/**
 * For `nchw` towers served from Hugging Face folders: the steps of their preprocessor_config.json
 * (CLIPImageProcessor / SiglipImageProcessor), applied as Python transformers does with PIL
 * (preprocess/pil-resize.ts): resize (shortest edge, aspect kept, or an exact size), center crop, rescale, normalise.
 */
export const PilImageSteps = z.object({
  resize: z.union([z.object({ shortest_edge: z.number().int().positive() }), size2d]).optional(),
  resample: z.enum(['bilinear', 'bicubic']),
  center_crop: size2d.optional(),
  /** Absent: no rescale (pixel values stay 0..255). */
  rescale_factor: z.number().positive().optional(),
  normalize: z.boolean(),
});
export type PilImageSteps = z.infer<typeof PilImageSteps>;

export const ImagePreprocessing = z.object({
  /**
   * `patches`: Qwen2-VL style: resize to multiples of patch_size*merge_size within [min_pixels, max_pixels],
   *   flatten patches of temporal_patch_size x patch_size x patch_size x 3 in merge-window order; graph inputs
   *   `patches [N, patch_dim]`, `position_ids [N, 2]` (row, col), `segment_ids [N]`.
   * `nchw`: fixed-size `pixel_values [1, 3, H, W]` (CLIP/SigLIP style), output `[1, tokens, D]` or `[tokens, D]`.
   */
  layout: z.enum(['patches', 'nchw']),
  patch_size: z.number().int().positive(),
  temporal_patch_size: z.number().int().positive().default(1),
  merge_size: z.number().int().positive().default(1),
  min_pixels: z.number().int().positive().optional(),
  max_pixels: z.number().int().positive().optional(),
  /** For `nchw`: the fixed input size. */
  image_size: size2d.optional(),
  /** For `nchw`: PIL-compatible steps from a preprocessor_config.json (else: sharp bicubic resize to image_size). */
  pil: PilImageSteps.optional(),
  mean: rgb,
  std: rgb,
  /** Position-table size; larger grids are rejected (MODEL_INPUT_TOO_LARGE). */
  max_grid_side: z.number().int().positive().optional(),
  /** Runs never hold more patches than this (segments are grouped up to it). */
  max_patches_per_run: z.number().int().positive().optional(),
});
export type ImagePreprocessing = z.infer<typeof ImagePreprocessing>;

export const VideoPreprocessing = z.object({
  max_frames: z.number().int().positive(),
  min_pixels: z.number().int().positive(),
  max_pixels: z.number().int().positive(),
});
export type VideoPreprocessing = z.infer<typeof VideoPreprocessing>;

export const AudioPreprocessing = z.object({
  sample_rate: z.number().int().positive(),
  n_mels: z.number().int().positive(),
  n_fft: z.number().int().positive(),
  win_length: z.number().int().positive(),
  hop_length: z.number().int().positive(),
  window: z.literal('hann'),
  fmin: z.number().nonnegative().default(0),
  fmax: z.number().positive().optional(),
  max_seconds: z.number().positive(),
  /**
   * Whisper's feature extraction (transformers' WhisperFeatureExtractor: the waveform zero-padded to chunk_length
   * seconds, reflect-centred STFT, last frame dropped; preprocess/whisper-features.ts) instead of the default log-mel.
   */
  whisper: z.object({ chunk_length: z.number().int().positive() }).optional(),
});
export type AudioPreprocessing = z.infer<typeof AudioPreprocessing>;

export const ImageGeneration = z.object({
  latent_channels: z.number().int().positive(),
  /** latent size = ceil(H / latent_downsample) x ceil(W / latent_downsample). */
  latent_downsample: z.number().int().positive(),
  max_height: z.number().int().positive(),
  max_width: z.number().int().positive(),
  default_steps: z.number().int().positive(),
  max_steps: z.number().int().positive(),
});
export type ImageGeneration = z.infer<typeof ImageGeneration>;

export const AudioGeneration = z.object({
  sample_rate: z.number().int().positive(),
  samples_per_frame: z.number().int().positive(),
  /** Frames of left context that affect one frame's output (chunks match one-shot iff left_context >= this - 1). */
  receptive_field_frames: z.number().int().positive(),
  default_chunk_size: z.number().int().positive(),
  default_left_context_size: z.number().int().nonnegative(),
});
export type AudioGeneration = z.infer<typeof AudioGeneration>;

export const TensorParallelStage = z.object({
  name: z.string().min(1),
  /**
   * `replicated`: every rank runs the same graph; the stage output replaces `hidden`.
   * `partial-sum`: rank r runs graphs[r]; outputs are summed across ranks (all-reduce) and added to `hidden`.
   */
  kind: z.enum(['replicated', 'partial-sum']),
  /** One entry of `graphs` per rank. */
  graphs: z.array(z.string().min(1)).min(1),
});

export const TensorParallel = z.object({
  degree: z.number().int().min(2),
  /** Runs in order; `hidden` is the running residual stream passed between stages. */
  stages: z.array(TensorParallelStage).min(1),
});
export type TensorParallel = z.infer<typeof TensorParallel>;

export const Family = z.enum(['vision-encoder', 'audio-encoder', 'image-generator', 'audio-generator', 'llm']);
export type Family = z.infer<typeof Family>;

export const Modality = z.enum(['image', 'video', 'audio', 'text']);
export type Modality = z.infer<typeof Modality>;

/** Graphs each family must have (beyond what a user adds). */
const REQUIRED_GRAPHS: Record<Family, string[]> = {
  'vision-encoder': ['encoder'],
  'audio-encoder': ['encoder'],
  'image-generator': ['prior', 'denoise', 'decoder'],
  'audio-generator': ['vocoder'],
  llm: [],
};

export const Manifest = z
  .object({
    schema_version: z.literal(1),
    name: z.string().min(1),
    family: Family,
    modalities: z.array(Modality).min(1),
    dtype: z.enum(['float32', 'float16', 'bfloat16']),
    /** Graphs shared by every model id (the body), by role name. */
    graphs: z.record(z.string(), GraphSpec),
    /** Served model ids, each with its hidden size and adapter graphs. */
    model_ids: z.record(z.string().min(1), ModelIdSpec).refine((m) => Object.keys(m).length > 0, 'must serve at least one model id'),
    preprocessing: z
      .object({ image: ImagePreprocessing.optional(), video: VideoPreprocessing.optional(), audio: AudioPreprocessing.optional() })
      .default({}),
    generation: z.object({ image: ImageGeneration.optional(), audio: AudioGeneration.optional() }).default({}),
    tensor_parallel: TensorParallel.optional(),
    /** Free-form family-specific settings (e.g. an LLM's layers, heads, vocab). */
    config: z.record(z.string(), z.unknown()).default({}),
    build: z.object({ seed: z.number().int(), source_hash: z.string() }).optional(),
  })
  .superRefine((m, ctx) => {
    for (const g of REQUIRED_GRAPHS[m.family]) {
      if (!m.graphs[g]) ctx.addIssue({ code: 'custom', path: ['graphs', g], message: `a ${m.family} needs graph '${g}'` });
    }
    const need = (cond: boolean, path: string[], what: string) => {
      if (!cond) ctx.addIssue({ code: 'custom', path, message: `required for ${what}` });
    };
    if (m.family === 'vision-encoder') need(!!m.preprocessing.image, ['preprocessing', 'image'], 'a vision-encoder');
    if (m.family === 'vision-encoder' && m.modalities.includes('video')) need(!!m.preprocessing.video, ['preprocessing', 'video'], 'video modality');
    if (m.family === 'audio-encoder') need(!!m.preprocessing.audio, ['preprocessing', 'audio'], 'an audio-encoder');
    if (m.family === 'image-generator') need(!!m.generation.image, ['generation', 'image'], 'an image-generator');
    if (m.family === 'audio-generator') need(!!m.generation.audio, ['generation', 'audio'], 'an audio-generator');
    const img = m.preprocessing.image;
    if (img?.layout === 'nchw') need(!!img.image_size, ['preprocessing', 'image', 'image_size'], "layout 'nchw'");
    if (img?.layout === 'patches') {
      need(img.min_pixels !== undefined, ['preprocessing', 'image', 'min_pixels'], "layout 'patches'");
      need(img.max_pixels !== undefined, ['preprocessing', 'image', 'max_pixels'], "layout 'patches'");
    }
    m.tensor_parallel?.stages.forEach((s, i) => {
      if (s.graphs.length !== m.tensor_parallel!.degree) {
        ctx.addIssue({ code: 'custom', path: ['tensor_parallel', 'stages', i, 'graphs'], message: `needs one graph per rank (${m.tensor_parallel!.degree})` });
      }
      s.graphs.forEach((g, j) => {
        if (!m.graphs[g]) ctx.addIssue({ code: 'custom', path: ['tensor_parallel', 'stages', i, 'graphs', j], message: `no graph '${g}' in graphs` });
      });
    });
  });
export type Manifest = z.infer<typeof Manifest>;
export type ManifestInput = z.input<typeof Manifest>;

/** "field.path: message" for each issue, so an error names the field. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`).join('; ');
}

/** The graph names the loader opens by default: all except tensor-parallel shards. */
export function defaultGraphNames(m: Manifest): string[] {
  const tp = new Set(m.tensor_parallel?.stages.flatMap((s) => s.graphs) ?? []);
  return Object.keys(m.graphs).filter((g) => !tp.has(g));
}
