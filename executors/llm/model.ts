/**
 * An LLM model folder opened for serving: manifest (family `llm`), the `embed` and `decoder` graphs, the
 * tokenizer, and the token embedding table (read once by running `embed` over the whole vocabulary, so a
 * step never pays a session call to look up embeddings). `run` is one decoder call over a batch.
 */
import ort from 'onnxruntime-node';
import { z } from 'zod';
import { loadModel, type LoadedModel } from '../models/loader.js';
import { isModelError } from '../models/errors.js';
import { llmErrors } from './errors.js';
import { Tokenizer } from './tokenizer.js';

const llmConfigSchema = z.object({
  hidden_size: z.number().int().positive(),
  num_layers: z.number().int().positive(),
  num_heads: z.number().int().positive(),
  head_dim: z.number().int().positive(),
  vocab_size: z.number().int().positive(),
  max_positions: z.number().int().positive(),
  kv_layout: z.literal('append'),
  pad_multiple: z.number().int().positive().default(16),
  tokenizer: z.string().default('tokenizer.json'),
});

export interface LlmConfig {
  hidden: number;
  layers: number;
  heads: number;
  headDim: number;
  vocab: number;
  maxPositions: number;
  /** Past and prefill lengths are padded to multiples of this (batch-invariant numerics). */
  padMultiple: number;
}

/** One decoder call: `batch` rows of `seq` new positions over `past` cached positions. */
export interface StepInput {
  batch: number;
  seq: number;
  past: number;
  /** [batch, seq, hidden] */
  embeds: Float32Array;
  /** [batch, seq] */
  positions: BigInt64Array;
  /** [batch, past + seq], 1 = attend */
  mask: BigInt64Array;
  /** Per layer, [batch, heads, past, headDim] each. */
  pastKeys: Float32Array[];
  pastValues: Float32Array[];
  /** Fetch `hidden_states` too (LLMEmbeddingTask). */
  wantHidden?: boolean;
}

export interface StepOutput {
  /** [batch, seq, vocab] */
  logits: Float32Array;
  /** [batch, seq, hidden], when asked for. */
  hidden?: Float32Array;
  /** Per layer, [batch, heads, seq, headDim]: the new positions only. */
  keys: Float32Array[];
  values: Float32Array[];
}

export interface LlmModelOptions {
  /** onnxruntime intra-op threads. @default onnxruntime's default (one per core) */
  threads?: number;
  /**
   * Let onnxruntime's intra-op threads spin between runs. Off by default: the JS thread does HTTP and
   * sampling between decode steps, and spinning threads take the cores it needs (measured: ~2x slower steps
   * and ~3x the CPU on a busy 2-core machine).
   */
  spinning?: boolean;
}

export class LlmModel {
  private readonly decoder: ort.InferenceSession;
  private readonly fetchNames: string[];
  private readonly fetchNamesHidden: string[];

  private constructor(
    readonly dir: string,
    private readonly loaded: LoadedModel,
    readonly config: LlmConfig,
    readonly tokenizer: Tokenizer,
    /** [vocab, hidden] row-major. */
    readonly embeddingTable: Float32Array,
  ) {
    this.decoder = loaded.graph('decoder');
    const kv = Array.from({ length: config.layers }, (_, l) => [`present.${l}.key`, `present.${l}.value`]).flat();
    this.fetchNames = ['logits', ...kv];
    this.fetchNamesHidden = ['logits', 'hidden_states', ...kv];
  }

  static async load(dir: string, opts: LlmModelOptions = {}): Promise<LlmModel> {
    let loaded: LoadedModel;
    try {
      loaded = await loadModel(dir, {
        graphs: ['embed', 'decoder'],
        sessionOptions: {
          ...(opts.threads ? { intraOpNumThreads: opts.threads, interOpNumThreads: 1 } : {}),
          extra: { session: { intra_op: { allow_spinning: opts.spinning ? '1' : '0' }, inter_op: { allow_spinning: opts.spinning ? '1' : '0' } } },
        },
      });
    } catch (e) {
      if (isModelError(e)) throw llmErrors.modelInvalid(e.message);
      throw e;
    }
    try {
      if (loaded.manifest.family !== 'llm') throw llmErrors.modelInvalid(`${dir} is a ${loaded.manifest.family}, not an llm`);
      const parsed = llmConfigSchema.safeParse(loaded.manifest.config);
      if (!parsed.success) {
        throw llmErrors.modelInvalid(`${dir}: manifest config: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
      }
      const c = parsed.data;
      const config: LlmConfig = {
        hidden: c.hidden_size, layers: c.num_layers, heads: c.num_heads, headDim: c.head_dim, vocab: c.vocab_size,
        maxPositions: c.max_positions, padMultiple: c.pad_multiple,
      };
      if (c.num_heads * c.head_dim !== c.hidden_size) throw llmErrors.modelInvalid(`${dir}: num_heads × head_dim ≠ hidden_size`);
      const tokenizer = await Tokenizer.load(dir, c.tokenizer);
      if (tokenizer.vocabSize !== config.vocab) throw llmErrors.modelInvalid(`${dir}: tokenizer vocab ${tokenizer.vocabSize} ≠ model vocab ${config.vocab}`);
      const ids = BigInt64Array.from({ length: config.vocab }, (_, i) => BigInt(i));
      const out = await loaded.graph('embed').run({ input_ids: new ort.Tensor('int64', ids, [1, config.vocab]) });
      const table = out.inputs_embeds?.data as Float32Array | undefined;
      if (!table || table.length !== config.vocab * config.hidden) throw llmErrors.modelInvalid(`${dir}: embed graph did not return [1, vocab, hidden]`);
      return new LlmModel(dir, loaded, config, tokenizer, Float32Array.from(table));
    } catch (e) {
      await loaded.close();
      throw e;
    }
  }

  get manifest() {
    return this.loaded.manifest;
  }

  /** The model ids this folder serves (the OpenAI `model` field must name one). */
  get modelIds(): string[] {
    return Object.keys(this.loaded.manifest.model_ids);
  }

  /** Modalities whose embeddings the model accepts at placeholder positions. */
  get modalities(): string[] {
    return this.loaded.manifest.modalities.filter((m) => m !== 'text');
  }

  /** Copies the embedding of token `id` into `out` at `offset`. */
  embedToken(id: number, out: Float32Array, offset: number): void {
    const h = this.config.hidden;
    out.set(this.embeddingTable.subarray(id * h, (id + 1) * h), offset);
  }

  async run(input: StepInput): Promise<StepOutput> {
    const { batch, seq, past } = input;
    const { hidden, heads, headDim, layers } = this.config;
    const feeds: Record<string, ort.Tensor> = {
      inputs_embeds: new ort.Tensor('float32', input.embeds, [batch, seq, hidden]),
      position_ids: new ort.Tensor('int64', input.positions, [batch, seq]),
      attention_mask: new ort.Tensor('int64', input.mask, [batch, past + seq]),
    };
    for (let l = 0; l < layers; l++) {
      feeds[`past_key_values.${l}.key`] = new ort.Tensor('float32', input.pastKeys[l]!, [batch, heads, past, headDim]);
      feeds[`past_key_values.${l}.value`] = new ort.Tensor('float32', input.pastValues[l]!, [batch, heads, past, headDim]);
    }
    let out: ort.InferenceSession.ReturnType;
    try {
      out = await this.decoder.run(feeds, input.wantHidden ? this.fetchNamesHidden : this.fetchNames);
    } catch (e) {
      throw llmErrors.runFailed(`decoder step (batch ${batch}, seq ${seq}, past ${past}): ${(e as Error).message}`);
    }
    const f = (name: string) => out[name]!.data as Float32Array;
    return {
      logits: f('logits'),
      ...(input.wantHidden ? { hidden: f('hidden_states') } : {}),
      keys: Array.from({ length: layers }, (_, l) => f(`present.${l}.key`)),
      values: Array.from({ length: layers }, (_, l) => f(`present.${l}.value`)),
    };
  }

  async close(): Promise<void> {
    await this.loaded.close();
  }
}
