import { z } from 'zod';
import { CompositeTask, ValidationError, type DataForward, type Stream } from '../sdk/index.js';
import { EncoderTask } from './encoder.js';
import { LLMAnswerStatesTask, LLMEmbeddingTask, LLMTask, type LLMEmbeddingOutput } from './llm.js';
import { MODALITIES, chatRequestSchema, multimodalParts, type ChatChunk, type ChatRequest, type Modality } from '../../lib/openai.js';

export const mllmOptionsSchema = z.object({
  modelId: z.string().min(1),
  modalities: z.array(z.enum(MODALITIES)).default([]),
  /** Encoders run as their own unit tasks (true) or inside the LLM (false). */
  encoderFission: z.boolean().default(true),
  /** One encoder call per modality with all its URLs (true), or one call per item (false). */
  coalesceEncoderInvocations: z.boolean().default(false),
  /** The encoder's model ids; give several LLMs the same set so they share one encoder deployment. */
  encoderModelIds: z.array(z.string().min(1)).optional(),
  /** The encoders' tensor-parallel degree (EncoderTask `tensorParallel`): devices, and shards, per encoder executor. */
  encoderTensorParallel: z.number().int().min(1).max(8).optional(),
  /** The LLM's tensor-parallel degree (LLMTask `tensorParallel`). */
  llmTensorParallel: z.number().int().min(1).max(8).optional(),
});
export type MLLMOptions = z.input<typeof mllmOptionsSchema>;

/**
 * Shared by MLLMTask and MLLMEmbeddingTask: one encoder per declared modality, then the LLM with the
 * embeddings placed in message order.
 */
abstract class MLLMBase<O> extends CompositeTask<ChatRequest, O> {
  readonly options: z.output<typeof mllmOptionsSchema>;
  readonly encoders: Partial<Record<Modality, EncoderTask>> = {};
  override readonly inputSchema = chatRequestSchema;

  constructor(options: MLLMOptions) {
    super();
    const r = mllmOptionsSchema.safeParse(options);
    if (!r.success) throw new ValidationError(`${new.target.name} options`, r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })));
    this.options = r.data;
    if (this.options.encoderFission)
      for (const modality of this.options.modalities)
        this.encoders[modality] = new EncoderTask({
          modality, modelIds: this.options.encoderModelIds ?? [this.options.modelId],
          ...(this.options.encoderTensorParallel ? { tensorParallel: this.options.encoderTensorParallel } : {}),
        });
  }

  get name(): string {
    return `mllm-${this.options.modelId}`;
  }

  /** The request with `cornserve_embeddings` filled from encoder invocations (record or replay alike). */
  protected withEmbeddings(req: ChatRequest): ChatRequest {
    const parts = multimodalParts(req);
    for (const [i, p] of parts.entries())
      if (!this.options.modalities.includes(p.modality))
        throw new ValidationError(`${this.name} input`, [
          { path: `messages (multimodal part ${i})`, message: `modality ${p.modality} is not declared (declared: ${this.options.modalities.join(', ') || 'none'})` },
        ]);
    if (!this.options.encoderFission || parts.length === 0) return req;
    const encode = (modality: Modality, urls: string[]) =>
      this.encoders[modality]!.invoke({ model_id: this.options.modelId, data_urls: urls }).embeddings;
    const embeddings: DataForward<'tensor'>[] = new Array(parts.length);
    if (this.options.coalesceEncoderInvocations) {
      for (const modality of MODALITIES) {
        const idx = parts.flatMap((p, i) => (p.modality === modality ? [i] : []));
        if (!idx.length) continue;
        const out = encode(modality, idx.map((i) => parts[i]!.url));
        idx.forEach((partIndex, k) => (embeddings[partIndex] = out[k]!));
      }
    } else {
      parts.forEach((p, i) => (embeddings[i] = encode(p.modality, [p.url])[0]!));
    }
    return { ...req, cornserve_embeddings: embeddings };
  }
}

/** Multimodal LLM: encoders for the declared modalities, then an LLM streaming chat chunks. */
export class MLLMTask extends MLLMBase<Stream<ChatChunk>> {
  readonly llm: LLMTask;

  constructor(options: MLLMOptions) {
    super(options);
    this.llm = new LLMTask({
      modelId: this.options.modelId, receiveEmbeddings: this.options.encoderFission,
      ...(this.options.llmTensorParallel ? { tensorParallel: this.options.llmTensorParallel } : {}),
    });
  }

  invoke(req: ChatRequest): Stream<ChatChunk> {
    return this.llm.invoke(this.withEmbeddings(req));
  }
}

/** Like MLLMTask, but returns the prompt's hidden states (forwarded) instead of text. */
export class MLLMEmbeddingTask extends MLLMBase<LLMEmbeddingOutput> {
  readonly llm: LLMEmbeddingTask;

  constructor(options: MLLMOptions) {
    super(options);
    this.llm = new LLMEmbeddingTask({ modelId: this.options.modelId, receiveEmbeddings: this.options.encoderFission });
  }

  invoke(req: ChatRequest): LLMEmbeddingOutput {
    return this.llm.invoke(this.withEmbeddings(req));
  }
}

/** Like MLLMTask, but streams the generated answer's hidden states (one chunk per token) instead of its text. */
export class MLLMAnswerStatesTask extends MLLMBase<LLMEmbeddingOutput> {
  readonly llm: LLMAnswerStatesTask;

  constructor(options: MLLMOptions) {
    super(options);
    this.llm = new LLMAnswerStatesTask({ modelId: this.options.modelId, receiveEmbeddings: this.options.encoderFission });
  }

  invoke(req: ChatRequest): LLMEmbeddingOutput {
    return this.llm.invoke(this.withEmbeddings(req));
  }
}
