/**
 * Tensor parallelism in the latency models: an executor on k× its task's devices runs each batch in
 * factor(k) × the single-device time. The factors come from Vidur's A100 profiles
 * (microsoft/vidur @ 7d47513, its published profiling data): per Llama-2-7B layer, the sum of the medians of
 * its linear and norm kernels per GPU shard (compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv, rows by
 * num_tokens × num_tensor_parallel_workers) plus two all-reduces of tokens × 4096 × 2 bytes among k GPUs of a
 * DGX node (network/a100_dgx/all_reduce.csv), ÷ the TP1 time. Attention kernels are not in that file: they
 * are taken to scale like the rest (heads split k ways). Two regimes, medians over the token counts:
 *  - large batches (512–4096 tokens; prefill, encoders): TP2 0.572, TP4 0.363, TP8 0.290;
 *  - small batches (1–256 tokens; decode steps):         TP2 0.860, TP4 0.561, TP8 0.474.
 * The LLM's KV capacity grows k-fold (its weights are split k ways; the cache takes the freed memory, roughly).
 * Only encoders (Eric's tensorParallel) and LLMs (the LLM executor's tp shards) run tensor parallel.
 */
import type { StageKind, StageModels } from './models.js';

export const TP_FACTORS: Readonly<Record<'large' | 'small', Readonly<Record<number, number>>>> = {
  large: { 1: 1, 2: 0.572, 4: 0.363, 8: 0.29 },
  small: { 1: 1, 2: 0.86, 4: 0.561, 8: 0.474 },
};

export const TP_DEGREES = [1, 2, 4, 8] as const;

/** Stages whose executors can run tensor parallel. */
export const supportsTp = (stage: StageKind) => stage === 'encoder' || stage === 'llm';

const scaled = <T extends Record<string, unknown>>(m: T, f: number): T =>
  Object.fromEntries(Object.entries(m).map(([k, v]) => [k, ['a', 'b', 'c'].includes(k) && typeof v === 'number' ? v * f : v])) as T;

/** The models of a stage run at `tp` × its task's devices. */
export function modelsAtTp(models: StageModels, stage: StageKind, tp: number): StageModels {
  if (tp === 1 || !supportsTp(stage)) return models;
  const large = TP_FACTORS.large[tp];
  const small = TP_FACTORS.small[tp];
  if (large === undefined || small === undefined) throw new RangeError(`tensor-parallel degree ${tp} has no latency factor (known: ${TP_DEGREES.join(', ')})`);
  if (stage === 'encoder' && models.encoder) return { ...models, encoder: scaled(models.encoder, large) };
  if (stage === 'llm' && models.llm) {
    const m = models.llm;
    return { ...models, llm: { ...m, prefill: scaled(m.prefill, large), decode: scaled(m.decode, small), ...(m.decodeLarge ? { decodeLarge: scaled(m.decodeLarge, small) } : {}), kvTokens: m.kvTokens * tp } };
  }
  return models;
}
