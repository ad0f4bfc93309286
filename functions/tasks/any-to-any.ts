import { z } from 'zod';
import { CompositeTask, type Stream } from '../sdk/index.js';
import { AudioGeneratorTask } from './generator.js';
import { MLLMAnswerStatesTask, MLLMTask, type MLLMOptions } from './mllm.js';
import { chatRequestSchema, type ChatChunk } from '../../lib/openai.js';

export const anyToAnyInputSchema = chatRequestSchema.extend({
  /** Speak the answer: the audio stream made from the generated answer instead of its text. */
  return_audio: z.boolean().default(false),
});
export type AnyToAnyInput = z.infer<typeof anyToAnyInputSchema>;

export interface AnyToAnyOptions extends MLLMOptions {
  audioModelId: string;
  /** Generated tokens per audio chunk and tokens of left context (the audio generator's chunk_size / left_context_size). */
  chunkSize?: number;
  leftContextSize?: number;
}

/**
 * Text (+ images, audio, video) in; the answer's text stream out, or with `return_audio` its speech: the LLM streams
 * the hidden state of each token it generates to the audio generator (sidecar stream), which voices every
 * `chunkSize` tokens as they come. Both LLM tasks share one deployment (same root class and config).
 *
 * A graph streams one output, so text and speech are two calls; with the same request (same `seed`) the LLM
 * generates the same answer in both (sampling is seeded per request and batch-invariant). The any-to-any app
 * makes both calls and interleaves the two streams.
 */
export class AnyToAnyTask extends CompositeTask<AnyToAnyInput, Stream<ChatChunk>> {
  override readonly inputSchema = anyToAnyInputSchema;
  readonly thinker: MLLMTask;
  readonly thinkerAnswer: MLLMAnswerStatesTask;
  readonly talker: AudioGeneratorTask;

  constructor(readonly options: AnyToAnyOptions) {
    super();
    const { audioModelId: _a, chunkSize: _c, leftContextSize: _l, ...mllm } = options;
    this.thinker = new MLLMTask(mllm);
    this.thinkerAnswer = new MLLMAnswerStatesTask(mllm);
    this.talker = new AudioGeneratorTask({ modelId: options.audioModelId });
  }

  get name(): string {
    return `any-to-any-${this.options.modelId}`;
  }

  invoke(input: AnyToAnyInput): Stream<ChatChunk> {
    const { return_audio, ...req } = input;
    if (!return_audio) return this.thinker.invoke(req);
    const answer = this.thinkerAnswer.invoke(req);
    return this.talker.invoke({
      embeddings: answer.embeddings,
      ...(this.options.chunkSize !== undefined ? { chunk_size: this.options.chunkSize } : {}),
      ...(this.options.leftContextSize !== undefined ? { left_context_size: this.options.leftContextSize } : {}),
    });
  }
}
