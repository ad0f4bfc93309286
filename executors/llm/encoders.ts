/**
 * The model's encoders run inside the LLM executor (`encoderFission: false`, the monolithic baseline): for each
 * modality the LLM takes, the same encoder model folder Eric would serve for this model id (Eric's findEncoder),
 * loaded in this process. A multimodal part's plain URL is loaded with Eric's URL loader (same limits and URL
 * rules), preprocessed by executors/models/preprocess and encoded by executors/models/run.ts — the functions
 * Eric's workers compute with — so the embedding equals the one Eric would forward, and the prompt, its
 * placeholders and the generated tokens are the same as with fission (test/integration/apps/monolithic.test.ts).
 *
 * The forward passes run on this process's thread between decode steps: while a part is encoded, running
 * sequences wait. That interference is what the disaggregation experiment measures against fission.
 */
import { findEncoder } from '../eric/model.js';
import { loadUrl, type UrlLoaderOptions } from '../eric/router/url-loader.js';
import { loadModel, type LoadedModel } from '../models/loader.js';
import { isModelError, modelErrors } from '../models/errors.js';
import type { Manifest } from '../models/manifest.js';
import { encodeAudio, encodeImage, encodeVideo, type Embeddings } from '../models/run.js';
import type { MediaEmbedding, MediaModality } from './prompt.js';

export interface InProcessEncoderOptions {
  /** Where model folders are found. @default $CORNSERVE_MODELS_DIR or <repo>/.models */
  modelsDir?: string;
  /** URL rules and limits (Eric's defaults unless given). */
  loader?: Partial<UrlLoaderOptions>;
  /** Most frames of a video before sampling (Eric's --max-video-frames). @default 4096 */
  maxVideoFrames?: number;
}

/** Eric's defaults (executors/eric/options.ts): 32 MiB per input, 5 s per fetch, no file: URLs, any host. */
const DEFAULT_LOADER: UrlLoaderOptions = { maxBytes: 32 << 20, timeoutMs: 5_000, allowFile: false };

/**
 * The session options of Eric's workers (one thread, sequential): a different thread count changes the order of
 * onnxruntime's reductions, hence the embedding's last bits, hence possibly a token.
 */
const ENCODER_SESSION = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' as const };

export class InProcessEncoders {
  private constructor(
    readonly modelId: string,
    /** modality → the encoder folder loaded for it (image and video share the vision encoder). */
    private readonly byModality: ReadonlyMap<MediaModality, LoadedModel>,
    private readonly loader: UrlLoaderOptions,
    private readonly maxVideoFrames: number,
  ) {}

  /**
   * Loads the encoder of every modality in `modalities` that serves `modelId`. A modality with no encoder folder
   * is left out (`modalities` says which were found; a part of that modality is then refused naming them).
   */
  static async load(modelId: string, modalities: readonly string[], o: InProcessEncoderOptions = {}): Promise<InProcessEncoders> {
    const byDir = new Map<string, Promise<LoadedModel>>();
    const byModality = new Map<MediaModality, LoadedModel>();
    try {
      for (const m of modalities as MediaModality[]) {
        let dir: string;
        let manifest: Manifest;
        try {
          ({ dir, manifest } = await findEncoder([modelId], m, 1, o.modelsDir));
        } catch (e) {
          if (isModelError(e) && e.code === 'MODEL_NOT_FOUND') continue;
          throw e;
        }
        if (!byDir.has(dir)) {
          byDir.set(dir, loadModel(dir, {
            modelIds: [modelId],
            sessionOptions: ENCODER_SESSION,
            manifest, // a Hugging Face folder's is derived (hf-encoder.ts)
          }));
        }
        byModality.set(m, await byDir.get(dir)!);
      }
    } catch (e) {
      await Promise.all([...byDir.values()].map((p) => p.then((l) => l.close(), () => undefined)));
      throw e;
    }
    return new InProcessEncoders(modelId, byModality, { ...DEFAULT_LOADER, ...o.loader }, o.maxVideoFrames ?? 4096);
  }

  get modalities(): MediaModality[] {
    return [...this.byModality.keys()];
  }

  /** Loads `url` and encodes it: the embedding [tokens, hidden] of one multimodal part. */
  async encode(modality: MediaModality, url: string, signal?: AbortSignal): Promise<MediaEmbedding> {
    const model = this.byModality.get(modality);
    if (!model) throw modelErrors.unsupported(`no ${modality} encoder runs in this LLM executor (has: ${this.modalities.join(', ') || 'none'})`);
    const { parts } = await loadUrl(url, this.loader, signal);
    const one = (what: string) => {
      if (parts.length !== 1) throw modelErrors.invalid(`${what} must be one file, got ${parts.length} parts`);
      return parts[0]!;
    };
    let e: Embeddings;
    if (modality === 'image') e = await encodeImage(model, one('an image'), this.modelId);
    else if (modality === 'audio') e = await encodeAudio(model, one('an audio clip'), this.modelId);
    else {
      if (parts.length > this.maxVideoFrames) throw modelErrors.tooLarge(`a video may have at most ${this.maxVideoFrames} frames, got ${parts.length}`);
      e = await encodeVideo(model, parts, this.modelId);
    }
    return { rows: e.shape[0], data: e.data };
  }

  async close(): Promise<void> {
    await Promise.all([...new Set(this.byModality.values())].map((m) => m.close()));
  }
}
