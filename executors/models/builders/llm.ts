/**
 * tiny-lm-a / tiny-lm-b: decoder-only transformers (pre-LN, multi-head attention with rotary positions and a
 * causal mask, GELU MLP) over a byte-level vocabulary, with the KV cache as explicit inputs and outputs.
 *
 * Graphs:
 *  - `embed`:   input_ids [batch, seq] i64 → inputs_embeds [batch, seq, hidden] (the token embedding table).
 *  - `decoder`: inputs_embeds [batch, seq, hidden], position_ids [batch, seq] i64,
 *               attention_mask [batch, past + seq] i64 (1 = attend), past_key_values.{l}.key|value
 *               [batch, heads, past, head_dim] → logits [batch, seq, vocab], hidden_states [batch, seq, hidden]
 *               (after the final LayerNorm), present.{l}.key|value [batch, heads, seq, head_dim].
 *    `present` holds the NEW positions only (manifest config `kv_layout: "append"`): the caller keeps the cache
 *    and appends them, so no step copies the whole cache through the graph.
 *
 * Batch invariance (a sequence's logits do not depend on what it is batched with) is a design goal: attention
 * over the past and over the new block are computed apart, sharing one max; sums are MatMuls (sequential in K),
 * so positions masked out at the END of the past contribute exact zeros. Callers pad the past length and the
 * prefill length to multiples of `pad_multiple` (16) and keep each sequence's tokens at positions 0..len-1.
 */
import { GraphBuilder, attr } from '../onnx/graph-builder.js';
import { ParamStore, layerNorm, linear, mlp } from '../onnx/layers.js';
import type { ManifestInput } from '../manifest.js';
import type { BuiltModel } from './common.js';
import { emitGraph } from './common.js';

export interface LlmSpec {
  folder: string;
  seed: number;
  modelId: string;
  hidden: number;
  heads: number;
  layers: number;
  mlpHidden: number;
  modalities: ('text' | 'image' | 'video' | 'audio')[];
}

export const LLM_SPECS: Record<string, LlmSpec> = {
  'tiny-lm-a': {
    folder: 'tiny-lm-a', seed: 3001, modelId: 'cornserve/tiny-vlm-a', hidden: 256, heads: 4, layers: 4, mlpHidden: 1024,
    modalities: ['text', 'image', 'video', 'audio'],
  },
  'tiny-lm-b': {
    folder: 'tiny-lm-b', seed: 3002, modelId: 'cornserve/tiny-vlm-b', hidden: 192, heads: 4, layers: 2, mlpHidden: 768,
    modalities: ['text', 'image', 'video'],
  },
};

export const LLM_COMMON = { maxPositions: 2048, ropeTheta: 10000, padMultiple: 16, maskValue: -1e9, tpDegree: 2 };

/** Special tokens after the 256 byte tokens; the vocabulary is padded with reserved ids to a multiple of 16. */
export const SPECIAL_TOKENS = [
  '<|bos|>', '<|eos|>', '<|pad|>', '<|system|>', '<|user|>', '<|assistant|>', '<|tool|>', '<|end|>',
  '<|image|>', '<|audio|>', '<|video|>',
] as const;
export const VOCAB_SIZE = Math.ceil((256 + SPECIAL_TOKENS.length) / 16) * 16;

/** tokenizer.json: byte-level tokens (id = byte value) plus named specials; the chat markers the TS template uses. */
export function tokenizerJson(): Record<string, unknown> {
  const special: Record<string, number> = {};
  SPECIAL_TOKENS.forEach((t, i) => (special[t] = 256 + i));
  for (let id = 256 + SPECIAL_TOKENS.length; id < VOCAB_SIZE; id++) special[`<|reserved_${id}|>`] = id;
  return {
    type: 'byte-level',
    version: 1,
    vocab_size: VOCAB_SIZE,
    special_tokens: special,
    bos_token: '<|bos|>',
    eos_tokens: ['<|eos|>', '<|end|>'],
    pad_token: '<|pad|>',
    placeholders: { image: '<|image|>', audio: '<|audio|>', video: '<|video|>' },
    chat: {
      roles: { system: '<|system|>', developer: '<|system|>', user: '<|user|>', assistant: '<|assistant|>', tool: '<|tool|>' },
      end_of_turn: '<|end|>',
      generation_prompt: '<|assistant|>',
    },
  };
}

/**
 * Output prior of the LM head: printable ASCII up, specials that a model never emits (role markers,
 * placeholders, reserved) far down, end-of-turn tokens neutral. Deterministic, like the weights.
 */
function lmHeadBias(): Float32Array {
  const b = new Float32Array(VOCAB_SIZE);
  for (let v = 0; v < 256; v++) b[v] = (v >= 0x20 && v < 0x7f) || v === 0x0a ? 1.5 : 0;
  for (let v = 256; v < VOCAB_SIZE; v++) b[v] = -100;
  b[256 + SPECIAL_TOKENS.indexOf('<|eos|>')] = 0;
  b[256 + SPECIAL_TOKENS.indexOf('<|end|>')] = 0;
  return b;
}

/** cos / sin tables [maxPositions, headDim] (rotate-half convention: both halves repeat the frequencies). */
function ropeTables(headDim: number): { cos: Float32Array; sin: Float32Array } {
  const { maxPositions, ropeTheta } = LLM_COMMON;
  const half = headDim / 2;
  const cos = new Float32Array(maxPositions * headDim);
  const sin = new Float32Array(maxPositions * headDim);
  for (let p = 0; p < maxPositions; p++) {
    for (let i = 0; i < half; i++) {
      const angle = p / ropeTheta ** ((2 * i) / headDim);
      cos[p * headDim + i] = cos[p * headDim + half + i] = Math.cos(angle);
      sin[p * headDim + i] = sin[p * headDim + half + i] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

function buildEmbed(p: ParamStore, s: LlmSpec): GraphBuilder {
  const g = new GraphBuilder(`${s.folder}-embed`);
  const ids = g.input('input_ids', 'INT64', ['batch', 'seq']);
  const table = g.initializer('embed_tokens.weight', p.get('embed_tokens.weight', [VOCAB_SIZE, s.hidden], 'matrix', 4), [VOCAB_SIZE, s.hidden]);
  g.output(g.gather(table, ids), 'inputs_embeds', 'FLOAT', ['batch', 'seq', s.hidden]);
  return g;
}

interface Shared {
  cos: string; sin: string; maskPast: string; maskNew: string; negative: string; onesCol: string;
}

/** x · cos + rotate_half(x) · sin, for x [batch, heads, seq, headDim]. */
function rope(g: GraphBuilder, x: string, sh: Shared, headDim: number): string {
  const half = headDim / 2;
  const x1 = g.slice(x, [0], [half], [3]);
  const x2 = g.slice(x, [half], [headDim], [3]);
  const rotated = g.concat([g.op('Neg', [x2]), x1], 3);
  return g.add(g.mul(x, sh.cos), g.mul(rotated, sh.sin));
}

/** [batch, len, hidden] → [batch, heads, len, headDim] */
function splitHeads(g: GraphBuilder, x: string, heads: number, headDim: number): string {
  return g.transpose(g.reshape(x, [0, 0, heads, headDim]), [0, 2, 1, 3]);
}

/**
 * One layer's attention. With `headRange` (a tensor-parallel shard) only those heads: q/k/v column shards, the
 * cache of those heads, and the output projection's matching rows, so the result is a partial sum (bias on
 * rank 0 only).
 */
function attentionLayer(
  g: GraphBuilder, p: ParamStore, x: string, l: number, s: LlmSpec, sh: Shared, shard: { headRange?: readonly [number, number] } = {},
): string {
  const hd = s.hidden / s.heads;
  const name = `layers.${l}.attn`;
  const [h0, h1] = shard.headRange ?? [0, s.heads];
  const heads = h1 - h0;
  const width = heads * hd;
  const cols = shard.headRange ? { cols: [h0 * hd, h1 * hd] as const } : {};
  const proj = (w: string) => splitHeads(g, linear(g, p, x, `${name}.${w}`, s.hidden, s.hidden, cols), heads, hd);
  const q = rope(g, proj('q'), sh, hd);
  const k = rope(g, proj('k'), sh, hd);
  const v = proj('v');
  g.output(k, `present.${l}.key`, 'FLOAT', ['batch', heads, 'seq', hd]);
  g.output(v, `present.${l}.value`, 'FLOAT', ['batch', heads, 'seq', hd]);
  const pastK = g.input(`past_key_values.${l}.key`, 'FLOAT', ['batch', heads, 'past', hd]);
  const pastV = g.input(`past_key_values.${l}.value`, 'FLOAT', ['batch', heads, 'past', hd]);

  const scale = g.constF([1 / Math.sqrt(hd)], []);
  const scores = (keys: string, mask: string) =>
    g.where(mask, g.mul(g.matmul(q, g.transpose(keys, [0, 1, 3, 2])), scale), sh.negative);
  const sPast = scores(pastK, sh.maskPast); // [batch, heads, seq, past]
  const sNew = scores(k, sh.maskNew); // [batch, heads, seq, seq]
  const rowMax = (t: string) => g.op('ReduceMax', [t, g.constI64([-1])], { keepdims: attr.i(1) });
  const m = g.op('Max', [rowMax(sPast), rowMax(sNew)]);
  const ePast = g.op('Exp', [g.sub(sPast, m)]);
  const eNew = g.op('Exp', [g.sub(sNew, m)]);
  // Row sums as MatMuls with a ones column: exact zeros at masked positions, whatever the padded length.
  const ones = (t: string) => g.op('Expand', [sh.onesCol, g.concat([g.shape(t, 3, 4), g.constI64([1])], 0)]);
  const den = g.add(g.matmul(ePast, ones(ePast)), g.matmul(eNew, ones(eNew)));
  const ctx = g.div(g.add(g.matmul(ePast, pastV), g.matmul(eNew, v)), den); // [batch, heads, seq, hd]
  const merged = g.reshape(g.transpose(ctx, [0, 2, 1, 3]), [0, 0, width]);
  return linear(g, p, merged, `${name}.o`, s.hidden, s.hidden, shard.headRange ? { rows: [h0 * hd, h1 * hd], bias: h0 === 0 } : {});
}

/** Masks and rotary tables from position_ids / attention_mask; `pastInput` names the past keys input giving the past length. */
function sharedInputs(g: GraphBuilder, x: string, s: LlmSpec, pastInput: string): Shared {
  const hd = s.hidden / s.heads;
  const pos = g.input('position_ids', 'INT64', ['batch', 'seq']);
  const mask = g.input('attention_mask', 'INT64', ['batch', 'total']);

  // Masks: the past part of attention_mask, and the new block's own part AND a causal triangle.
  const past = g.shape(pastInput, 2, 3); // [1] (the input is declared by the attention layer, name known)
  const seq = g.shape(x, 1, 2);
  const bool = (t: string) => g.cast(t, 'BOOL');
  const maskPast = g.unsqueeze(bool(g.sliceDynamic(mask, g.constI64([0]), past, g.constI64([1]))), [1, 2]);
  const total = g.shape(mask, 1, 2);
  const newPad = g.unsqueeze(bool(g.sliceDynamic(mask, past, total, g.constI64([1]))), [1, 2]); // [b,1,1,seq]
  const r = g.op('Range', [g.constI64([0], []), g.squeeze(seq, [0]), g.constI64([1], [])]);
  const causal = g.op('LessOrEqual', [g.unsqueeze(r, [0]), g.unsqueeze(r, [1])]); // [seq, seq]: key j ≤ query i
  const maskNew = g.op('And', [newPad, causal]);

  const { cos, sin } = ropeTables(hd);
  const { maxPositions } = LLM_COMMON;
  const gatherTable = (name: string, data: Float32Array) =>
    g.unsqueeze(g.gather(g.initializer(name, data, [maxPositions, hd]), pos), [1]); // [batch, 1, seq, hd]
  return {
    cos: gatherTable('rope.cos', cos), sin: gatherTable('rope.sin', sin), maskPast, maskNew,
    negative: g.constF([LLM_COMMON.maskValue], []), onesCol: g.constF([1], [1, 1]),
  };
}

/** Final LayerNorm → hidden_states, LM head → logits. */
function head(g: GraphBuilder, p: ParamStore, x: string, s: LlmSpec): void {
  const hidden = layerNorm(g, p, x, 'norm', s.hidden);
  g.output(hidden, 'hidden_states', 'FLOAT', ['batch', 'seq', s.hidden]);
  const w = g.initializer('lm_head.weight', p.get('lm_head.weight', [s.hidden, VOCAB_SIZE], 'matrix', 3), [s.hidden, VOCAB_SIZE]);
  const logits = g.add(g.matmul(hidden, w), g.initializer('lm_head.prior', lmHeadBias(), [VOCAB_SIZE]));
  g.output(logits, 'logits', 'FLOAT', ['batch', 'seq', VOCAB_SIZE]);
}

function buildDecoder(p: ParamStore, s: LlmSpec): GraphBuilder {
  const g = new GraphBuilder(`${s.folder}-decoder`);
  let x = g.input('inputs_embeds', 'FLOAT', ['batch', 'seq', s.hidden]);
  const sh = sharedInputs(g, x, s, 'past_key_values.0.key');
  for (let l = 0; l < s.layers; l++) {
    x = g.add(x, attentionLayer(g, p, layerNorm(g, p, x, `layers.${l}.ln1`, s.hidden), l, s, sh));
    x = g.add(x, mlp(g, p, layerNorm(g, p, x, `layers.${l}.ln2`, s.hidden), `layers.${l}.mlp`, s.hidden, s.mlpHidden));
  }
  head(g, p, x, s);
  return g;
}

/**
 * Decoder shards for tensor-parallel degree `degree` (Megatron-style), fed `hidden` [batch, seq, hidden]:
 * per layer and rank an attention graph (its heads' q/k/v columns, its heads' cache in and out, the output
 * projection's rows → `partial`) and an MLP graph (fc1 columns, fc2 rows → `partial`); partials are summed
 * across ranks and added to `hidden`. The embedding (the engine's table) and the head are replicated.
 */
function buildTensorParallel(p: ParamStore, s: LlmSpec, degree: number) {
  const graphs = new Map<string, GraphBuilder>();
  const stages: { name: string; kind: 'replicated' | 'partial-sum'; graphs: string[] }[] = [];
  const hiddenShape = ['batch', 'seq', s.hidden];
  const headsPer = s.heads / degree;
  const colsPer = s.mlpHidden / degree;
  for (let l = 0; l < s.layers; l++) {
    const attn: string[] = [];
    const mlps: string[] = [];
    for (let r = 0; r < degree; r++) {
      const a = new GraphBuilder(`${s.folder}-tp-r${r}-layer${l}-attn`);
      const h = a.input('hidden', 'FLOAT', hiddenShape);
      // The past input is declared by attentionLayer; sharedInputs only refers to it by name.
      const sh = sharedInputs(a, h, s, `past_key_values.${l}.key`);
      const part = attentionLayer(a, p, layerNorm(a, p, h, `layers.${l}.ln1`, s.hidden), l, s, sh, { headRange: [r * headsPer, (r + 1) * headsPer] });
      a.output(part, 'partial', 'FLOAT', hiddenShape);
      graphs.set(`tp.r${r}.layer${l}.attn`, a);
      attn.push(`tp.r${r}.layer${l}.attn`);

      const m = new GraphBuilder(`${s.folder}-tp-r${r}-layer${l}-mlp`);
      const hm = m.input('hidden', 'FLOAT', hiddenShape);
      const mp = mlp(m, p, layerNorm(m, p, hm, `layers.${l}.ln2`, s.hidden), `layers.${l}.mlp`, s.hidden, s.mlpHidden, {
        colRange: [r * colsPer, (r + 1) * colsPer], outBias: r === 0,
      });
      m.output(mp, 'partial', 'FLOAT', hiddenShape);
      graphs.set(`tp.r${r}.layer${l}.mlp`, m);
      mlps.push(`tp.r${r}.layer${l}.mlp`);
    }
    stages.push({ name: `layer${l}.attn`, kind: 'partial-sum', graphs: attn });
    stages.push({ name: `layer${l}.mlp`, kind: 'partial-sum', graphs: mlps });
  }
  const hg = new GraphBuilder(`${s.folder}-tp-head`);
  head(hg, p, hg.input('hidden', 'FLOAT', hiddenShape), s);
  graphs.set('tp.head', hg);
  stages.push({ name: 'head', kind: 'replicated', graphs: Array(degree).fill('tp.head') });
  return { graphs, stages };
}

export function buildLlm(spec: LlmSpec): BuiltModel {
  const p = new ParamStore(spec.seed);
  const files = new Map<string, Uint8Array>();
  const embed = emitGraph(files, buildEmbed(p, spec), 'embed.onnx');
  const decoder = emitGraph(files, buildDecoder(p, spec), 'decoder.onnx');
  const tp = buildTensorParallel(p, spec, LLM_COMMON.tpDegree);
  const tpGraphs = Object.fromEntries([...tp.graphs].map(([name, g]) => [name, emitGraph(files, g, `${name}.onnx`)]));
  files.set('tokenizer.json', Buffer.from(`${JSON.stringify(tokenizerJson(), null, 2)}\n`));
  const manifest: ManifestInput = {
    schema_version: 1,
    name: spec.folder,
    family: 'llm',
    modalities: spec.modalities,
    dtype: 'float32',
    graphs: { embed, decoder, ...tpGraphs },
    tensor_parallel: { degree: LLM_COMMON.tpDegree, stages: tp.stages },
    model_ids: { [spec.modelId]: { hidden_size: spec.hidden, graphs: {} } },
    config: {
      hidden_size: spec.hidden,
      num_layers: spec.layers,
      num_heads: spec.heads,
      head_dim: spec.hidden / spec.heads,
      mlp_hidden: spec.mlpHidden,
      vocab_size: VOCAB_SIZE,
      max_positions: LLM_COMMON.maxPositions,
      rope_theta: LLM_COMMON.ropeTheta,
      kv_layout: 'append',
      pad_multiple: LLM_COMMON.padMultiple,
      tokenizer: 'tokenizer.json',
    },
  };
  return { folder: spec.folder, seed: spec.seed, files, manifest };
}
