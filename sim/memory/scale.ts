/**
 * A device preset's latency rows are profiled on one model (LLM rows: DistServe's OPT-13B; encoder rows: derived
 * for Qwen2.5-VL-7B's vision tower, sim/presets/gpus.yaml). A memory preset's model runs the same kernels at other
 * sizes, so its rows are the preset's scaled by how the work grows with the model's size:
 *  - prefill a, b and decode c (per-token GEMMs): × parameters a token runs through (active ones for a mixture of experts);
 *  - prefill c (attention over the prompt, Σtokens²): × layers × hidden;
 *  - decode a (each step reads every weight): × all parameters;
 *  - decode b (each step reads every context token's KV): × KV bytes per token;
 *  - encoder a, b: × the tower's parameters; c (full attention over an item's patches): × full-attention layers ×
 *    hidden. A tiled encoder attends within each tile, so its c becomes per-patch work (c × patches per tile).
 */
import type { EncoderModel, LlmModel, StageModels } from '../latency/models.js';
import { kvBytesPerToken, loadModelSpecs, type ModelSpec } from './specs.js';

/** facebook/opt-13b config.json (num_hidden_layers 40, hidden_size 5120, 40 heads, fp16) and its model card (12.85B parameters). */
export const OPT_13B = { params: 12.85e9, layers: 40, hidden: 5120, kvBytesPerToken: 40 * 40 * 128 * 2 * 2 } as const;

/** The model the preset's encoder rows were derived for (sim/fit/vision-tower.ts). */
export const ENCODER_ROWS_MODEL = 'qwen2.5-vl-7b';

const times = <T extends { a: number; b: number; c: number }>(q: T, f: { a: number; b: number; c: number }): T => ({ ...q, a: q.a * f.a, b: q.b * f.b, c: q.c * f.c });

export function scaledLlm(base: LlmModel, spec: ModelSpec): LlmModel {
  const l = spec.llm;
  const compute = (l.activeParams ?? l.params) / OPT_13B.params;
  const attention = (l.layers * l.hidden) / (OPT_13B.layers * OPT_13B.hidden);
  const decode = { a: l.params / OPT_13B.params, b: kvBytesPerToken(spec) / OPT_13B.kvBytesPerToken, c: compute };
  return {
    ...base,
    prefill: times(base.prefill, { a: compute, b: compute, c: attention }),
    decode: times(base.decode, decode),
    ...(base.decodeLarge ? { decodeLarge: times(base.decodeLarge, decode) } : {}),
  };
}

export function scaledEncoder(base: EncoderModel, spec: ModelSpec): EncoderModel | undefined {
  const e = spec.encoder;
  if (!e) return undefined;
  const ref = loadModelSpecs()[ENCODER_ROWS_MODEL]!.encoder!;
  const f = e.params / ref.params;
  const c = (base.c ?? 0) * ((e.fullAttentionLayers * e.hidden) / (ref.fullAttentionLayers * ref.hidden));
  const perTile = e.tile ? (e.tile.size / e.patchSize) ** 2 : 0;
  return {
    ...base,
    a: base.a * f,
    b: base.b * f + (e.tile ? c * perTile : 0),
    c: e.tile ? 0 : c,
    patchSize: e.patchSize,
    llmTokensPerUnit: e.llmTokensPerUnit,
    bytesPerUnit: spec.llm.hidden * spec.dtypeBytes * e.llmTokensPerUnit,
    ...(e.tile ? { tile: e.tile } : {}),
  };
}

/** The preset's rows for a memory preset's model (stages the preset lacks stay absent). */
export function modelsFor(base: StageModels, spec: ModelSpec): StageModels {
  const encoder = base.encoder ? scaledEncoder(base.encoder, spec) : undefined;
  return { ...base, ...(base.llm ? { llm: scaledLlm(base.llm, spec) } : {}), ...(encoder ? { encoder } : {}) };
}
