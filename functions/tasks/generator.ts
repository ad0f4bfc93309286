import { z } from 'zod';
import { Stream, UnitTask, registerTaskClass, streamOf, tensorForward } from '../sdk/index.js';
import { chatChunkSchema, modelBasename, type ChatChunk } from '../../lib/openai.js';

export const generatorConfigSchema = z.object({
  modelId: z.string().min(1),
  maxBatchSize: z.number().int().positive().default(1),
});

export const imageGeneratorInputSchema = z.object({
  embeddings: tensorForward(),
  height: z.number().int().positive().max(2048),
  width: z.number().int().positive().max(2048),
  num_inference_steps: z.number().int().positive().max(100).default(4),
  /** Leading embedding rows to drop (e.g. a system prompt's tokens). */
  skip_tokens: z.number().int().nonnegative().default(0),
});
export type ImageGeneratorInput = z.infer<typeof imageGeneratorInputSchema>;

export const imageGeneratorOutputSchema = z.object({ generated: z.string().describe('base64 PNG') });
export type ImageGeneratorOutput = z.infer<typeof imageGeneratorOutputSchema>;

/** Embeddings in, one PNG image out. */
export class ImageGeneratorTask extends UnitTask<typeof generatorConfigSchema, ImageGeneratorInput, ImageGeneratorOutput> {
  static override readonly configSchema = generatorConfigSchema;
  readonly inputSchema = imageGeneratorInputSchema;
  readonly outputSchema = imageGeneratorOutputSchema;

  get name(): string {
    return `generator-image-${modelBasename(this.config.modelId)}`;
  }

  makeRecordOutput(): ImageGeneratorOutput {
    return { generated: '' };
  }
}
registerTaskClass(ImageGeneratorTask);

export const audioGeneratorInputSchema = z.object({
  embeddings: tensorForward(),
  chunk_size: z.number().int().positive().optional(),
  left_context_size: z.number().int().nonnegative().optional(),
});
export type AudioGeneratorInput = z.infer<typeof audioGeneratorInputSchema>;

/** Embeddings in, a stream of audio chunks out (OpenAI chunks with base64 PCM16 in `delta.audio.data`). */
export class AudioGeneratorTask extends UnitTask<typeof generatorConfigSchema, AudioGeneratorInput, Stream<ChatChunk>> {
  static override readonly configSchema = generatorConfigSchema;
  readonly inputSchema = audioGeneratorInputSchema;
  readonly outputSchema = streamOf(chatChunkSchema);

  get name(): string {
    return `generator-audio-${modelBasename(this.config.modelId)}`;
  }

  makeRecordOutput(): Stream<ChatChunk> {
    return Stream.placeholder(chatChunkSchema);
  }
}
registerTaskClass(AudioGeneratorTask);
