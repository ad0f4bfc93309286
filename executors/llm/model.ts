/**
 * An LLM model folder opened for serving. Two kinds share the engine (continuous batching, KV cache, steps):
 *  - `builtin`: the project's manifest folders (family `llm`): `embed` + `decoder` graphs taking inputs_embeds,
 *    `present` = the new positions only, the byte-level tokenizer;
 *  - `hf-decoder`: a Hugging Face / Optimum export (config.json, onnx/model.onnx, Optimum's decoder_model_merged.onnx
 *    fed `use_cache_branch`, or Optimum's decoder_model.onnx + decoder_with_past_model.onnx pair):
 *    input_ids (or inputs_embeds with embed_tokens.onnx, the VLM split), grouped-query KV heads from
 *    config.json, `present` = past and new positions concatenated (the new ones are sliced out here), the
 *    folder's tokenizer.json + chat_template.
 * When the decoder takes embeddings, the token embedding table is read once by running the embed graph over the
 * whole vocabulary, so a step never pays a session call to look up embeddings. `run` is one decoder call.
 */
import { access } from 'node:fs/promises';
import { basename, join } from 'node:path';
import ort from 'onnxruntime-node';
import { z } from 'zod';
import { createSession, loadModel, type LoadedModel } from '../models/loader.js';
import { isModelError } from '../models/errors.js';
import { MANIFEST_FILE } from '../models/manifest.js';
import { type DecoderLayout, type HfDtype, decoderGeometry, decoderLayout, inspectHfFolder, partFile } from '../models/hf-folder.js';
import { llmErrors } from './errors.js';
import { copyMeter } from '../../policies/kv-cache.js';
import { HfTokenizer } from './hf-tokenizer.js';
import { Tokenizer, type TextTokenizer } from './tokenizer.js';
import { TensorParallelDecoder } from './tp-model.js';

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
  /** KV heads: the cache's and past_key_values' head count (num_key_value_heads under grouped-query attention). */
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
  /** [batch, seq, hidden] (empty when the model takes ids) */
  embeds: Float32Array;
  /** [batch, seq] token ids, for a model that takes input_ids. */
  ids?: BigInt64Array;
  /** [batch, seq] */
  positions: BigInt64Array;
  /** [batch, past + seq], 1 = attend */
  mask: BigInt64Array;
  /** Per layer, [batch, heads, past, headDim] each. */
  pastKeys: Float32Array[];
  pastValues: Float32Array[];
  /** Fetch `hidden_states` too (LLMEmbeddingTask). */
  wantHidden?: boolean;
  /**
   * Pre-allocated `present` tensors onnxruntime writes into (per layer, [batch, heads, past + seq, headDim]:
   * decoders whose present is past ++ new). The step's keys / values are then these views.
   */
  into?: { keys: Float32Array[]; values: Float32Array[] };
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
  /** The id the OpenAI `model` field names, for a Hugging Face folder (default: the folder's name). */
  modelId?: string;
  /**
   * Let onnxruntime's intra-op threads spin between runs. Off by default: the JS thread does HTTP and
   * sampling between decode steps, and spinning threads take the cores it needs (measured: ~2x slower steps
   * and ~3x the CPU on a busy 2-core machine).
   */
  spinning?: boolean;
  /**
   * A Hugging Face folder's ONNX variant (transformers.js suffixes: fp16 → `onnx/model_fp16.onnx`). The
   * executor feeds and reads float32 either way (fp16 exports with float32 I/O, `keep_io_types`). @default fp32
   */
  dtype?: HfDtype;
  /** Run decoder steps over this many tensor-parallel ranks (a built-in folder's tp.* shards; tp-model.ts). */
  tensorParallel?: number;
}

export type LlmModelKind = 'builtin' | 'hf-decoder';

interface ModelParts {
  kind: LlmModelKind;
  name: string;
  modelIds: string[];
  modalities: string[];
  decoder: ort.InferenceSession;
  /** Decoder takes input_ids (else inputs_embeds). */
  takesIds: boolean;
  /** `present` holds past + new positions (Optimum), else the new ones only. */
  presentFull: boolean;
  /** How a Hugging Face decoder is laid out (merged: feed use_cache_branch; pair: `noPast` runs the prompt). */
  layout?: DecoderLayout;
  /** Optimum's pair: the decoder without past inputs, for steps over an empty past. */
  noPast?: ort.InferenceSession;
  /** Tensor-parallel steps, replacing the decoder's (built-in folders, tensorParallel > 1). */
  tp?: TensorParallelDecoder;
  close: () => Promise<void>;
}

function sessionOptions(opts: LlmModelOptions): ort.InferenceSession.SessionOptions {
  return {
    ...(opts.threads ? { intraOpNumThreads: opts.threads, interOpNumThreads: 1 } : {}),
    extra: { session: { intra_op: { allow_spinning: opts.spinning ? '1' : '0' }, inter_op: { allow_spinning: opts.spinning ? '1' : '0' } } },
  };
}

/** The vocabulary's embeddings [vocab, hidden], by one run of the embed graph. */
async function embeddingTable(dir: string, embed: ort.InferenceSession, vocab: number, hidden: number): Promise<Float32Array> {
  const ids = BigInt64Array.from({ length: vocab }, (_, i) => BigInt(i));
  const out = await embed.run({ input_ids: new ort.Tensor('int64', ids, [1, vocab]) });
  const table = out.inputs_embeds?.data as Float32Array | undefined;
  if (!table || table.length !== vocab * hidden) throw llmErrors.modelInvalid(`${dir}: embed graph did not return [1, vocab, hidden]`);
  return Float32Array.from(table);
}

export class LlmModel {
  private readonly decoder: ort.InferenceSession;
  private readonly fetchNames: string[];
  private readonly fetchNamesHidden: string[];

  private constructor(
    readonly dir: string,
    private readonly parts: ModelParts,
    readonly config: LlmConfig,
    readonly tokenizer: TextTokenizer,
    /** [vocab, hidden] row-major (empty when the decoder takes ids). */
    readonly embeddingTable: Float32Array,
  ) {
    this.decoder = parts.decoder;
    const kv = Array.from({ length: config.layers }, (_, l) => [`present.${l}.key`, `present.${l}.value`]).flat();
    this.fetchNames = ['logits', ...kv];
    this.fetchNamesHidden = ['logits', 'hidden_states', ...kv];
  }

  /** A project manifest folder (manifest.json) or a Hugging Face export (config.json + ONNX parts). */
  static async load(dir: string, opts: LlmModelOptions = {}): Promise<LlmModel> {
    const hasManifest = await access(join(dir, MANIFEST_FILE)).then(() => true, () => false);
    return hasManifest ? LlmModel.loadBuiltin(dir, opts) : LlmModel.loadHf(dir, opts);
  }

  private static async loadHf(dir: string, opts: LlmModelOptions): Promise<LlmModel> {
    let folder;
    let geo;
    try {
      folder = await inspectHfFolder(dir);
      if (folder.kind !== 'decoder' && folder.kind !== 'vlm') throw llmErrors.modelInvalid(`${dir} is a ${folder.kind}, not a decoder`);
      geo = decoderGeometry(folder);
    } catch (e) {
      if (isModelError(e)) throw llmErrors.modelInvalid(e.message);
      throw e;
    }
    if ((opts.tensorParallel ?? 1) > 1) throw llmErrors.modelInvalid(`${dir}: tensor parallelism needs a built-in folder with tp.* shards`);
    const options = sessionOptions(opts); // createSession adds this process's execution provider
    const opened: ort.InferenceSession[] = [];
    const open = async (path: string) => {
      try {
        const s = await createSession(path, options);
        opened.push(s);
        return s;
      } catch (e) {
        throw llmErrors.modelInvalid(isModelError(e) ? e.message : `onnxruntime cannot load ${path}: ${(e as Error).message}`);
      }
    };
    const close = async () => void (await Promise.all(opened.map((s) => s.release())));
    try {
      const dtype = opts.dtype ?? 'fp32';
      const decoderPath = partFile(folder, 'decoder', dtype);
      const decoder = await open(decoderPath);
      const layout = decoderLayout(decoderPath, decoder.inputNames);
      if (layout === 'merged') {
        const flag = (decoder.inputMetadata as readonly { name: string; type?: string }[]).find((m) => m.name === 'use_cache_branch');
        if (flag?.type && flag.type !== 'bool') throw llmErrors.modelInvalid(`${dir}: the merged decoder's use_cache_branch is ${flag.type}; Optimum's is bool [1]`);
      }
      const noPast = layout === 'pair' ? await open(partFile(folder, 'decoder_no_past', dtype)) : undefined;
      const takesIds = decoder.inputNames.includes('input_ids');
      const needed = [takesIds ? 'input_ids' : 'inputs_embeds', 'attention_mask', 'position_ids',
        ...Array.from({ length: geo.layers }, (_, l) => [`past_key_values.${l}.key`, `past_key_values.${l}.value`]).flat()];
      const missing = needed.filter((n) => !decoder.inputNames.includes(n));
      if (missing.length) throw llmErrors.modelInvalid(`${dir}: the decoder has no input ${missing.join(', ')} (has ${decoder.inputNames.join(', ')})`);
      const positions = (decoder.inputMetadata as readonly { name: string; shape?: readonly unknown[] }[]).find((m) => m.name === 'position_ids');
      if (positions?.shape?.length === 3) {
        throw llmErrors.modelInvalid(`${dir}: the decoder takes 3-D position_ids (M-RoPE, as real Qwen2-VL exports do); the executor feeds 1-D positions [batch, seq] (docs/models.md)`);
      }
      const tokenizer = await HfTokenizer.load(dir);
      const table = takesIds ? new Float32Array(0) : await embeddingTable(dir, await open(partFile(folder, 'embed_tokens', folder.parts.embed_tokens?.some((p) => p.dtype === dtype) ? dtype : 'fp32')), geo.vocab, geo.hidden);
      const config: LlmConfig = {
        hidden: geo.hidden, layers: geo.layers, heads: geo.kvHeads, headDim: geo.headDim, vocab: geo.vocab,
        maxPositions: geo.maxPositions, padMultiple: 16,
      };
      const parts: ModelParts = {
        kind: 'hf-decoder', name: basename(dir), modelIds: [opts.modelId ?? basename(dir)],
        // A split VLM takes image embeddings (its vision_encoder runs in Eric) at its image placeholder.
        modalities: folder.kind === 'vlm' && tokenizer.placeholders.image ? ['image'] : [],
        decoder, takesIds, presentFull: true, layout, ...(noPast ? { noPast } : {}), close,
      };
      return new LlmModel(dir, parts, config, tokenizer, table);
    } catch (e) {
      await close();
      throw e;
    }
  }

  private static async loadBuiltin(dir: string, opts: LlmModelOptions): Promise<LlmModel> {
    if ((opts.dtype ?? 'fp32') !== 'fp32') throw llmErrors.modelInvalid(`${dir}: --dtype ${opts.dtype} needs a Hugging Face folder with that variant; built-in folders are fp32`);
    let loaded: LoadedModel;
    try {
      loaded = await loadModel(dir, { graphs: ['embed', 'decoder'], sessionOptions: sessionOptions(opts) });
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
      const table = await embeddingTable(dir, loaded.graph('embed'), config.vocab, config.hidden);
      const tp = (opts.tensorParallel ?? 1) > 1 ? await TensorParallelDecoder.load(dir, opts.tensorParallel!, config, sessionOptions(opts)) : undefined;
      const parts: ModelParts = {
        kind: 'builtin', name: loaded.manifest.name, modelIds: Object.keys(loaded.manifest.model_ids),
        modalities: loaded.manifest.modalities.filter((m) => m !== 'text'), decoder: loaded.graph('decoder'),
        takesIds: false, presentFull: false, ...(tp ? { tp } : {}), close: async () => void (await Promise.all([loaded.close(), tp?.close()])),
      };
      return new LlmModel(dir, parts, config, tokenizer, table);
    } catch (e) {
      await loaded.close();
      throw e;
    }
  }

  /** Tensor-parallel ranks the steps run over (1 = the single decoder). */
  get tensorParallel(): number {
    return this.parts.tp?.degree ?? 1;
  }

  get kind(): LlmModelKind {
    return this.parts.kind;
  }

  /** The folder's name (manifest name or directory name). */
  get name(): string {
    return this.parts.name;
  }

  /** A Hugging Face decoder's layout (single graph, Optimum merged, Optimum pair); undefined for built-in folders. */
  get layout(): DecoderLayout | undefined {
    return this.parts.layout;
  }

  /**
   * `present` is past ++ new (Optimum's graphs): the prompt runs over an empty past, and a step's present is
   * the next step's past as it stands. Else `present` holds the new positions only.
   */
  get presentFull(): boolean {
    return this.parts.presentFull;
  }

  /** The decoder takes token ids (prompts carry no embeddings). */
  get takesIds(): boolean {
    return this.parts.takesIds;
  }

  /** The model ids this folder serves (the OpenAI `model` field must name one). */
  get modelIds(): string[] {
    return this.parts.modelIds;
  }

  /** Modalities whose embeddings the model accepts at placeholder positions. */
  get modalities(): string[] {
    return this.parts.modalities;
  }

  /** Copies the embedding of token `id` into `out` at `offset`. */
  embedToken(id: number, out: Float32Array, offset: number): void {
    const h = this.config.hidden;
    out.set(this.embeddingTable.subarray(id * h, (id + 1) * h), offset);
  }

  async run(input: StepInput): Promise<StepOutput> {
    const { batch, seq, past } = input;
    const { hidden, heads, headDim, layers } = this.config;
    if (input.wantHidden && !this.decoder.outputNames.includes('hidden_states')) {
      throw llmErrors.badRequest(`model ${this.name} has no hidden_states output`, 'vllm_xargs');
    }
    if (this.parts.tp) return this.parts.tp.run(input);
    const feeds: Record<string, ort.Tensor> = {
      position_ids: new ort.Tensor('int64', input.positions, [batch, seq]),
      attention_mask: new ort.Tensor('int64', input.mask, [batch, past + seq]),
    };
    if (this.takesIds) feeds.input_ids = new ort.Tensor('int64', input.ids!, [batch, seq]);
    else feeds.inputs_embeds = new ort.Tensor('float32', input.embeds, [batch, seq, hidden]);
    // Optimum's pair runs an empty past on its no-past decoder; its merged decoder takes the branch as an input.
    const session = past === 0 && this.parts.noPast ? this.parts.noPast : this.decoder;
    if (session !== this.parts.noPast) {
      for (let l = 0; l < layers; l++) {
        feeds[`past_key_values.${l}.key`] = new ort.Tensor('float32', input.pastKeys[l]!, [batch, heads, past, headDim]);
        feeds[`past_key_values.${l}.value`] = new ort.Tensor('float32', input.pastValues[l]!, [batch, heads, past, headDim]);
      }
    }
    if (this.parts.layout === 'merged') feeds.use_cache_branch = new ort.Tensor('bool', Uint8Array.of(past > 0 ? 1 : 0), [1]);
    const names = input.wantHidden ? this.fetchNamesHidden : this.fetchNames;
    const into = input.into;
    const fetches = into
      ? Object.fromEntries(names.map((n) => {
        const m = /^present\.(\d+)\.(key|value)$/.exec(n);
        if (!m) return [n, null];
        const data = (m[2] === 'key' ? into.keys : into.values)[Number(m[1])]!;
        return [n, new ort.Tensor('float32', data, [batch, heads, past + seq, headDim])];
      }))
      : names;
    let out: ort.InferenceSession.ReturnType;
    try {
      out = await session.run(feeds, fetches as never);
    } catch (e) {
      throw llmErrors.runFailed(`decoder step (batch ${batch}, seq ${seq}, past ${past}): ${(e as Error).message}`);
    }
    // Outputs onnxruntime-node copied into fresh JS memory (a pre-allocated one is written in place).
    for (const name of Object.keys(out)) if (!(into && name.startsWith('present.'))) copyMeter.bytes += (out[name]!.data as Float32Array).byteLength;
    const f = (name: string) => out[name]!.data as Float32Array;
    if (into) return { logits: f('logits'), ...(input.wantHidden ? { hidden: f('hidden_states') } : {}), keys: into.keys, values: into.values };
    const kv = (name: string) => (this.parts.presentFull ? newPositions(f(name), batch * heads, past, seq, headDim) : f(name));
    return {
      logits: f('logits'),
      ...(input.wantHidden ? { hidden: f('hidden_states') } : {}),
      keys: Array.from({ length: layers }, (_, l) => kv(`present.${l}.key`)),
      values: Array.from({ length: layers }, (_, l) => kv(`present.${l}.value`)),
    };
  }

  async close(): Promise<void> {
    await this.parts.close();
  }
}

/** The last `seq` of `past + seq` positions of each of `rows` (batch × heads) rows: [rows, seq, headDim]. */
function newPositions(full: Float32Array, rows: number, past: number, seq: number, headDim: number): Float32Array {
  const out = new Float32Array(rows * seq * headDim);
  copyMeter.bytes += out.byteLength;
  for (let r = 0; r < rows; r++) out.set(full.subarray((r * (past + seq) + past) * headDim, (r * (past + seq) + past + seq) * headDim), r * seq * headDim);
  return out;
}
