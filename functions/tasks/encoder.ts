import { z } from 'zod';
import { DataForward, UnitTask, ValidationError, registerTaskClass, tensorForward } from '../sdk/index.js';
import { MODALITIES, modelBasename } from '../../lib/openai.js';

const sortedUnique = (ids: string[]) => [...new Set(ids)].sort();
/** `-tp2` for a tensor-parallel task, so its name and executors differ from the single-device one's. */
export const tpSuffix = (degree: number | undefined) => (degree && degree > 1 ? `-tp${degree}` : '');

export const encoderConfigSchema = z.object({
  modality: z.enum(MODALITIES),
  /** The (LLM) model ids whose embeddings this encoder produces; several ids share one deployment (adapters). */
  modelIds: z.array(z.string().min(1)).min(1, 'at least one model id').transform(sortedUnique),
  maxBatchSize: z.number().int().positive().default(1),
  /**
   * Tensor-parallel degree: each executor gets this many colocated devices and runs one worker (shard) per device
   * (the model must have shards of this degree). Absent = 1.
   */
  tensorParallel: z.number().int().min(1).max(8).optional(),
});

export const encoderInputSchema = z.object({
  model_id: z.string().min(1),
  data_urls: z.array(z.string().min(1)).min(1, 'at least one URL'),
  /**
   * Return the embeddings to the app as JSON (`values`) instead of forwarding them executor to executor
   * (`embeddings` is then empty): an embedding service's result. Absent = false.
   */
  return_embeddings: z.boolean().optional(),
});
export type EncoderInput = z.infer<typeof encoderInputSchema>;

/** One embedding as JSON: row-major `data` of `shape` [rows, cols]. */
export const embeddingValueSchema = z.object({ shape: z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()]), data: z.array(z.number()) });
export type EmbeddingValue = z.infer<typeof embeddingValueSchema>;

export const encoderOutputSchema = z.object({
  embeddings: z.array(tensorForward()),
  /** With `return_embeddings`: one per URL, in order. */
  values: z.array(embeddingValueSchema).optional(),
});
export type EncoderOutput = z.infer<typeof encoderOutputSchema>;

/**
 * Encodes images, videos or audio into embeddings `[tokens, hidden]`, one DataForward per URL (or, with
 * `return_embeddings`, one JSON value per URL).
 */
export class EncoderTask extends UnitTask<typeof encoderConfigSchema, EncoderInput, EncoderOutput> {
  static override readonly configSchema = encoderConfigSchema;
  readonly inputSchema = encoderInputSchema;
  readonly outputSchema = encoderOutputSchema;

  get name(): string {
    return `encoder-${this.config.modality}-${modelBasename(this.config.modelIds[0]!)}${tpSuffix(this.config.tensorParallel)}`;
  }

  override validateInput(input: EncoderInput): void {
    if (!this.config.modelIds.includes(input.model_id))
      throw new ValidationError(`${this.name} input`, [
        { path: 'model_id', message: `${input.model_id} is not served by this encoder (serves ${this.config.modelIds.join(', ')})` },
      ]);
  }

  makeRecordOutput(input: EncoderInput): EncoderOutput {
    if (input.return_embeddings) return { embeddings: [], values: input.data_urls.map(() => ({ shape: [0, 0], data: [] })) };
    return { embeddings: input.data_urls.map(() => DataForward.tensor()) };
  }
}
registerTaskClass(EncoderTask);
