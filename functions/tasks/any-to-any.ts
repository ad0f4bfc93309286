import { z } from 'zod';
import { CompositeTask, type Stream } from '../sdk/index.js';
import { AudioGeneratorTask } from './generator.js';
import { MLLMEmbeddingTask, MLLMTask, type MLLMOptions } from './mllm.js';
import { chatRequestSchema, type ChatChunk } from './openai.js';

export const anyToAnyInputSchema = chatRequestSchema.extend({
  /** Speak the answer: the LLM's hidden states go to the audio generator, which streams audio chunks. */
  return_audio: z.boolean().default(false),
});
export type AnyToAnyInput = z.infer<typeof anyToAnyInputSchema>;

export interface AnyToAnyOptions extends MLLMOptions {
  audioModelId: string;
  /** Audio frames per generated chunk and frames of left context (passed to the audio generator). */
  chunkSize?: number;
  leftContextSize?: number;
}

/**
 * Text (+ images, audio, video) in; a text stream out, or with `return_audio` an audio stream made by
 * LLMEmbedding -> AudioGenerator. Both LLM tasks share one deployment (same root class and config).
 */
export class AnyToAnyTask extends CompositeTask<AnyToAnyInput, Stream<ChatChunk>> {
  override readonly inputSchema = anyToAnyInputSchema;
  readonly thinker: MLLMTask;
  readonly thinkerStates: MLLMEmbeddingTask;
  readonly talker: AudioGeneratorTask;

  constructor(readonly options: AnyToAnyOptions) {
    super();
    const { audioModelId: _a, chunkSize: _c, leftContextSize: _l, ...mllm } = options;
    this.thinker = new MLLMTask(mllm);
    this.thinkerStates = new MLLMEmbeddingTask(mllm);
    this.talker = new AudioGeneratorTask({ modelId: options.audioModelId });
  }

  get name(): string {
    return `any-to-any-${this.options.modelId}`;
  }

  invoke(input: AnyToAnyInput): Stream<ChatChunk> {
    const { return_audio, ...req } = input;
    if (!return_audio) return this.thinker.invoke(req);
    const states = this.thinkerStates.invoke(req);
    return this.talker.invoke({
      embeddings: states.embeddings,
      ...(this.options.chunkSize !== undefined ? { chunk_size: this.options.chunkSize } : {}),
      ...(this.options.leftContextSize !== undefined ? { left_context_size: this.options.leftContextSize } : {}),
    });
  }
}
