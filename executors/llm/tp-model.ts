/**
 * Tensor-parallel decoder steps for a built-in LLM folder with a `tensor_parallel` section (tp.* shards,
 * executors/models/builders/llm.ts). Each rank holds its own sessions (its heads' q/k/v columns and output rows,
 * its MLP columns); a step runs, layer by layer, every rank's attention shard over ITS heads' past keys and
 * values, sums the partials into the residual, then the MLP shards likewise, then the replicated head. The ranks
 * run concurrently (onnxruntime computes off the JS thread); partials are summed in rank order, so the result is
 * deterministic. Same `StepInput` → `StepOutput` contract as LlmModel.run: the caller's cache holds all heads and
 * each rank reads and returns its own slice of them.
 */
import ort from 'onnxruntime-node';
import { loadManifest, type LoadedModel } from '../models/loader.js';
import { loadRank, reducePartials } from '../models/tensor-parallel.js';
import { llmErrors } from './errors.js';
import type { LlmConfig, StepInput, StepOutput } from './model.js';

/** Heads [h0, h1) of a [batch, heads, len, headDim] buffer. */
export function sliceHeads(x: Float32Array, batch: number, heads: number, len: number, headDim: number, h0: number, h1: number): Float32Array {
  const per = len * headDim;
  const out = new Float32Array(batch * (h1 - h0) * per);
  for (let b = 0; b < batch; b++) out.set(x.subarray((b * heads + h0) * per, (b * heads + h1) * per), b * (h1 - h0) * per);
  return out;
}

/** Concatenates per-rank head slices [batch, headsPer, len, headDim] into [batch, heads, len, headDim]. */
export function joinHeads(parts: readonly Float32Array[], batch: number): Float32Array {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const out = new Float32Array(total);
  let off = 0;
  for (let b = 0; b < batch; b++) {
    for (const p of parts) {
      const n = p.length / batch;
      out.set(p.subarray(b * n, (b + 1) * n), off);
      off += n;
    }
  }
  return out;
}

export class TensorParallelDecoder {
  private constructor(private readonly ranks: LoadedModel[], private readonly config: LlmConfig) {}

  static async load(dir: string, degree: number, config: LlmConfig, sessionOptions: ort.InferenceSession.SessionOptions): Promise<TensorParallelDecoder> {
    const manifest = await loadManifest(dir);
    const shards = manifest.tensor_parallel?.degree;
    if (shards !== degree) throw llmErrors.modelInvalid(`${dir} has ${shards ? `shards for tensor parallelism ${shards}` : 'no tensor-parallel shards'}, not ${degree}`);
    if (config.heads % degree !== 0) throw llmErrors.modelInvalid(`${dir}: ${config.heads} heads do not split over ${degree} ranks`);
    const ranks: LoadedModel[] = [];
    try {
      for (let r = 0; r < degree; r++) ranks.push(await loadRank(dir, r, { sessionOptions }));
    } catch (e) {
      await Promise.all(ranks.map((m) => m.close()));
      throw llmErrors.modelInvalid(`${dir}: tensor parallelism ${degree}: ${(e as Error).message}`);
    }
    return new TensorParallelDecoder(ranks, config);
  }

  get degree(): number {
    return this.ranks.length;
  }

  private async runGraph(rank: number, name: string, feeds: Record<string, ort.Tensor>): Promise<ort.InferenceSession.ReturnType> {
    try {
      return await this.ranks[rank]!.graph(name).run(feeds);
    } catch (e) {
      throw llmErrors.runFailed(`tensor-parallel rank ${rank} graph ${name}: ${(e as Error).message}`);
    }
  }

  async run(input: StepInput): Promise<StepOutput> {
    const { batch, seq, past } = input;
    const { hidden: width, heads, headDim, layers } = this.config;
    const degree = this.ranks.length;
    const per = heads / degree;
    const common = {
      position_ids: new ort.Tensor('int64', input.positions, [batch, seq]),
      attention_mask: new ort.Tensor('int64', input.mask, [batch, past + seq]),
    };
    let hidden: ort.Tensor = new ort.Tensor('float32', input.embeds, [batch, seq, width]);
    const keys: Float32Array[] = [];
    const values: Float32Array[] = [];
    for (let l = 0; l < layers; l++) {
      const attn = await Promise.all(this.ranks.map((_, r) => {
        const kv = (x: Float32Array) => new ort.Tensor('float32', sliceHeads(x, batch, heads, past, headDim, r * per, (r + 1) * per), [batch, per, past, headDim]);
        return this.runGraph(r, `tp.r${r}.layer${l}.attn`, {
          ...common, hidden, [`past_key_values.${l}.key`]: kv(input.pastKeys[l]!), [`past_key_values.${l}.value`]: kv(input.pastValues[l]!),
        });
      }));
      hidden = reducePartials(hidden, attn.map((o) => o.partial!));
      keys.push(joinHeads(attn.map((o) => o[`present.${l}.key`]!.data as Float32Array), batch));
      values.push(joinHeads(attn.map((o) => o[`present.${l}.value`]!.data as Float32Array), batch));
      const mlp = await Promise.all(this.ranks.map((_, r) => this.runGraph(r, `tp.r${r}.layer${l}.mlp`, { hidden })));
      hidden = reducePartials(hidden, mlp.map((o) => o.partial!));
    }
    const out = await this.runGraph(0, 'tp.head', { hidden });
    return {
      logits: out.logits!.data as Float32Array,
      ...(input.wantHidden ? { hidden: out.hidden_states!.data as Float32Array } : {}),
      keys, values,
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.ranks.map((m) => m.close()));
  }
}
