import { z } from 'zod';
import { DataForward, Stream, UnitTask, registerTaskClass, streamOf, tensorForward } from '../sdk/index.js';
import { tpSuffix } from './encoder.js';
import { chatChunkSchema, chatRequestSchema, modelBasename, type ChatChunk, type ChatRequest } from '../../lib/openai.js';

/** ONNX variants of a Hugging Face folder, by transformers.js's file suffixes (executors/models/hf-folder.ts DTYPE_SUFFIX). */
export const LLM_DTYPES = ['fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4'] as const;

/** `-fp16` etc. in executor names: deployments of one model in different dtypes are different deployments. */
export const dtypeSuffix = (dtype: string | undefined) => (dtype && dtype !== 'fp32' ? `-${dtype}` : '');

export const llmConfigSchema = z.object({
  modelId: z.string().min(1),
  /** The LLM receives multimodal embeddings from encoders (encoder fission) instead of encoding itself. */
  receiveEmbeddings: z.boolean().default(true),
  /**
   * Tensor-parallel degree: each executor gets this many colocated devices and runs its decoder steps over as many
   * ranks (the model must have shards of this degree). Absent = 1.
   */
  tensorParallel: z.number().int().min(1).max(8).optional(),
  /** A Hugging Face folder's ONNX variant (`fp16` → onnx/model_fp16.onnx); the executor's `--dtype`. Absent = fp32. */
  dtype: z.enum(LLM_DTYPES).optional(),
  /**
   * Memory one executor may use, MiB (the `llama-cpp` descriptor: a GGUF model whose weights and context are
   * estimated above it is refused at start with GGUF_TOO_LARGE). Absent = the node's free memory.
   */
  memoryMiB: z.number().int().positive().optional(),
});

/**
 * The root of the LLM unit tasks: LLMTask and LLMEmbeddingTask with equal config are equivalent and
 * share one LLM deployment.
 */
export abstract class LLMBaseTask<I, O> extends UnitTask<typeof llmConfigSchema, I, O> {
  static override readonly configSchema = llmConfigSchema;

  get name(): string {
    return `llm-${modelBasename(this.config.modelId)}${tpSuffix(this.config.tensorParallel)}${dtypeSuffix(this.config.dtype)}`;
  }
}

/** OpenAI chat request in, stream of OpenAI chat chunks out. */
export class LLMTask extends LLMBaseTask<ChatRequest, Stream<ChatChunk>> {
  readonly inputSchema = chatRequestSchema;
  readonly outputSchema = streamOf(chatChunkSchema);

  makeRecordOutput(): Stream<ChatChunk> {
    return Stream.placeholder(chatChunkSchema);
  }
}
registerTaskClass(LLMTask);

export const llmEmbeddingOutputSchema = z.object({ embeddings: tensorForward() });
export type LLMEmbeddingOutput = z.infer<typeof llmEmbeddingOutputSchema>;

/** The prompt's hidden states `[tokens, hidden]`, forwarded to another executor (e.g. an audio generator). */
export class LLMEmbeddingTask extends LLMBaseTask<ChatRequest, LLMEmbeddingOutput> {
  readonly inputSchema = chatRequestSchema;
  readonly outputSchema = llmEmbeddingOutputSchema;

  makeRecordOutput(): LLMEmbeddingOutput {
    return { embeddings: DataForward.tensor() };
  }
}
registerTaskClass(LLMEmbeddingTask);

/**
 * The hidden states of the generated ANSWER: the LLM generates as LLMTask does (same sampling: give a seed to get
 * the same answer as an LLMTask call) and streams, as each token is produced, the final hidden state that token
 * was sampled from ([1, hidden] per token) to the consumer, which reads it as a sidecar stream (Geri speaks it).
 * Same input and output as LLMEmbeddingTask; the descriptor tells the two apart.
 */
export class LLMAnswerStatesTask extends LLMEmbeddingTask {}
registerTaskClass(LLMAnswerStatesTask);
