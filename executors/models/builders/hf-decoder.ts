/**
 * tiny-qwen2: a random-weight Qwen2-style decoder in the Hugging Face / Optimum / transformers.js layout, the
 * way `optimum-cli export onnx --task text-generation-with-past` writes a real one:
 *
 *   config.json  generation_config.json  tokenizer.json  tokenizer_config.json  onnx/model.onnx
 *
 * Architecture (Qwen2): token embedding → per layer RMSNorm → attention (q/k/v with bias, o without, rotary
 * positions from `position_ids`, grouped-query attention: `num_key_value_heads` < `num_attention_heads`) →
 * residual → RMSNorm → SwiGLU MLP → residual; final RMSNorm → lm_head.
 *
 * Graph I/O (Optimum's names): input_ids [batch, seq] i64, attention_mask [batch, past + seq] i64 (1 = attend),
 * position_ids [batch, seq] i64, past_key_values.{l}.key|value [batch, kv_heads, past, head_dim] →
 * logits [batch, seq, vocab], present.{l}.key|value [batch, kv_heads, past + seq, head_dim] (past and new
 * positions concatenated, as Optimum exports do). Query i may attend key j when attention_mask[j] = 1 and
 * j ≤ past + i. With `inputsEmbeds` the decoder takes inputs_embeds [batch, seq, hidden] instead of input_ids
 * (the Qwen2-VL split export's `decoder_model_merged.onnx`) and `embed_tokens.onnx` is written beside it.
 *
 * The tokenizer is a byte-level BPE (GPT-2 byte alphabet, a few merges, ChatML special tokens) with the
 * Qwen2-Instruct ChatML chat template.
 */
import { GraphBuilder, attr } from '../onnx/graph-builder.js';
import { float16Bytes } from '../onnx/float16.js';
import { ParamStore, linear } from '../onnx/layers.js';
import type { BuiltModel, DecoderShape } from './common.js';

export interface HfDecoderSpec extends DecoderShape {
  folder: string;
  /** Split export (embed_tokens.onnx + decoder_model_merged.onnx taking inputs_embeds). */
  inputsEmbeds?: boolean;
  /** Extra special tokens (e.g. the Qwen2-VL vision markers). */
  extraSpecials?: readonly string[];
  /** Also write `onnx/model_fp16.onnx` (decoder-only export). */
  fp16?: boolean;
  /** tokenizer_config.json's chat_template (default: the Qwen2-Instruct ChatML template). */
  chatTemplate?: string;
  /**
   * The decoder files of a decoder-only export: `single` = `onnx/model.onnx` (transformers.js's layout);
   * `merged` = `onnx/decoder_model_merged.onnx` (Optimum's default: one If over `use_cache_branch`);
   * `pair` = `onnx/decoder_model.onnx` + `onnx/decoder_with_past_model.onnx` (older Optimum, `--no-post-process`).
   * @default single
   */
  layout?: 'single' | 'merged' | 'pair';
}

export const TINY_QWEN2: HfDecoderSpec = { folder: 'tiny-qwen2', seed: 5101, hidden: 64, heads: 4, kvHeads: 2, layers: 2, intermediate: 128, fp16: true };
/** A benchmark configuration where the KV cache dominates a decode step (not built by `make models`). */
export const BENCH_QWEN2_LARGE: HfDecoderSpec = { folder: 'bench-qwen2-large', seed: 5102, hidden: 512, heads: 8, kvHeads: 8, layers: 8, intermediate: 512, layout: 'merged' };
/** tiny-qwen2's weights in Optimum's two other layouts (same seed: the same greedy tokens). */
export const TINY_QWEN2_MERGED: HfDecoderSpec = { ...TINY_QWEN2, folder: 'tiny-qwen2-merged', fp16: false, layout: 'merged' };
export const TINY_QWEN2_PAIR: HfDecoderSpec = { ...TINY_QWEN2, folder: 'tiny-qwen2-pair', fp16: false, layout: 'pair' };

const ROPE_THETA = 1_000_000;
const MAX_POSITIONS = 2048;
const RMS_EPS = 1e-6;

/** GPT-2's reversible byte → printable-unicode map (byte-level BPE alphabet). */
export function bytesToUnicode(): string[] {
  const keep: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const out: string[] = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) out[b] = String.fromCharCode(keep.includes(b) ? b : 256 + n++);
  return out;
}

/** Merges, in rank order (each pair must be tokens already in the vocabulary). */
export const MERGES: readonly [string, string][] = [
  ['Ġ', 't'], ['h', 'e'], ['i', 'n'], ['Ġ', 'a'], ['e', 'r'], ['o', 'n'], ['Ġt', 'he'], ['r', 'e'], ['Ġ', 's'], ['a', 't'],
  ['e', 'n'], ['o', 'r'], ['Ġ', 'w'], ['l', 'l'], ['Ġ', 'h'], ['e', 's'], ['Ġ', 'o'], ['i', 's'], ['Ġ', 'i'], ['Ġ', 'c'],
];

export const CHATML_SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;

/** The Qwen2-Instruct ChatML template (as in its tokenizer_config.json). */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** Qwen2's pre-tokenizer split regex. */
const QWEN2_SPLIT = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

export interface HfVocab {
  vocab: Record<string, number>;
  specials: Record<string, number>;
  /** The model's vocab_size (tokenizer ids padded to a multiple of 16, like real exports pad theirs). */
  size: number;
}

export function hfVocab(extraSpecials: readonly string[] = []): HfVocab {
  const vocab: Record<string, number> = {};
  bytesToUnicode().forEach((c, b) => (vocab[c] = b));
  let next = 256;
  for (const [a, b] of MERGES) vocab[a + b] = next++;
  const specials: Record<string, number> = {};
  for (const s of [...CHATML_SPECIALS, ...extraSpecials]) specials[s] = next++;
  return { vocab, specials, size: Math.ceil(next / 16) * 16 };
}

export function hfTokenizerFiles(extraSpecials: readonly string[] = [], chatTemplate = CHATML_TEMPLATE): { tokenizer: object; tokenizerConfig: object } {
  const v = hfVocab(extraSpecials);
  const added = Object.entries(v.specials).map(([content, id]) => ({
    id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
  }));
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: QWEN2_SPLIT }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
      fuse_unk: false, byte_fallback: false, ignore_merges: false, vocab: v.vocab, merges: MERGES.map(([a, b]) => `${a} ${b}`),
    },
  };
  const tokenizerConfig = {
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(added.map(({ id, ...rest }) => [String(id), rest])),
    additional_special_tokens: ['<|im_start|>', '<|im_end|>', ...extraSpecials],
    bos_token: null,
    chat_template: chatTemplate,
    clean_up_tokenization_spaces: false,
    eos_token: '<|im_end|>',
    errors: 'replace',
    model_max_length: MAX_POSITIONS,
    pad_token: '<|endoftext|>',
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    unk_token: null,
  };
  return { tokenizer, tokenizerConfig };
}

/** x · rsqrt(mean(x²) + eps) · weight over the last axis. */
function rmsNorm(g: GraphBuilder, p: ParamStore, x: string, name: string, d: number): string {
  const ms = g.reduceMean(g.mul(x, x), [-1]);
  const inv = g.div(g.constF([1], []), g.op('Sqrt', [g.add(ms, g.constF([RMS_EPS], []))]));
  return g.mul(g.mul(x, inv), g.initializer(`${name}.weight`, p.get(`${name}.weight`, [d], 'scale'), [d]));
}

function ropeTables(headDim: number): { cos: Float32Array; sin: Float32Array } {
  const half = headDim / 2;
  const cos = new Float32Array(MAX_POSITIONS * headDim);
  const sin = new Float32Array(MAX_POSITIONS * headDim);
  for (let pos = 0; pos < MAX_POSITIONS; pos++) {
    for (let i = 0; i < half; i++) {
      const a = pos / ROPE_THETA ** ((2 * i) / headDim);
      cos[pos * headDim + i] = cos[pos * headDim + half + i] = Math.cos(a);
      sin[pos * headDim + i] = sin[pos * headDim + half + i] = Math.sin(a);
    }
  }
  return { cos, sin };
}

/** Output prior: readable bytes and merges up, specials other than the end tokens never emitted. */
function lmHeadPrior(v: HfVocab): Float32Array {
  const b = new Float32Array(v.size).fill(-100);
  for (let byte = 0; byte < 256; byte++) b[byte] = (byte >= 0x20 && byte < 0x7f) || byte === 0x0a ? 1.5 : 0;
  for (const [a, c] of MERGES) b[v.vocab[a + c]!] = 1.5;
  b[v.specials['<|im_end|>']!] = 0;
  b[v.specials['<|endoftext|>']!] = 0;
  return b;
}

/** The values a decoder body reads: graph inputs, or an If branch's outer-scope names. */
interface DecoderInputs {
  /** input_ids, or inputs_embeds when the spec takes embeddings. */
  first: string;
  mask: string;
  pos: string;
  /** Per layer past keys / values; none for a decoder without past (Optimum's `decoder_model.onnx`). */
  pastK?: string[];
  pastV?: string[];
}

interface DecoderOutputs { logits: string; presentK: string[]; presentV: string[] }

/** Arrays shared by the bodies of one file (the same array is the same initializer in both If branches). */
interface DecoderTables { cos: Float32Array; sin: Float32Array; prior: Float32Array }

function decoderTables(s: HfDecoderSpec, v: HfVocab): DecoderTables {
  return { ...ropeTables(s.hidden / s.heads), prior: lmHeadPrior(v) };
}

/**
 * One decoder computation. With a past: keys are past ++ new, and query i may attend key j when
 * attention_mask[j] = 1 and j ≤ past + i. Without one (Optimum's no-past decoder and the merged graph's
 * no-cache branch): keys are the new positions only and the mask's last `seq` entries apply, so the past is
 * ignored — a no-cache branch taken with a past attends to the new tokens alone (wrong tokens, not an error).
 */
function decoderBody(g: GraphBuilder, p: ParamStore, s: HfDecoderSpec, v: HfVocab, t: DecoderTables, io: DecoderInputs): DecoderOutputs {
  const hd = s.hidden / s.heads;
  const groups = s.heads / s.kvHeads;
  const withPast = !!io.pastK;
  const x0 = s.inputsEmbeds
    ? io.first
    : g.gather(g.initializer('model.embed_tokens.weight', p.get('model.embed_tokens.weight', [v.size, s.hidden], 'matrix', 4), [v.size, s.hidden]), io.first);
  let x = x0;
  const { pos } = io;
  const seq = g.shape(pos, 1, 2);
  const range = (n: string) => g.op('Range', [g.constI64([0], []), g.squeeze(n, [0]), g.constI64([1], [])]);
  let allowed: string;
  if (withPast) {
    const past = g.shape(io.pastK![0]!, 2, 3);
    const total = g.shape(io.mask, 1, 2);
    const qAbs = g.add(range(seq), g.squeeze(past, [0]));
    const causal = g.op('LessOrEqual', [g.unsqueeze(range(total), [0]), g.unsqueeze(qAbs, [1])]); // [seq, total]
    allowed = g.op('And', [g.unsqueeze(g.cast(io.mask, 'BOOL'), [1, 2, 3]), causal]); // [batch, 1, 1, seq, total]
  } else {
    const own = g.sliceDynamic(io.mask, g.op('Neg', [seq]), g.constI64([2 ** 62]), g.constI64([1])); // the last seq entries
    const causal = g.op('LessOrEqual', [g.unsqueeze(range(seq), [0]), g.unsqueeze(range(seq), [1])]);
    allowed = g.op('And', [g.unsqueeze(g.cast(own, 'BOOL'), [1, 2, 3]), causal]);
  }
  const negative = g.constF([-1e9], []);

  const gatherTable = (name: string, data: Float32Array) =>
    g.unsqueeze(g.gather(g.initializer(name, data, [MAX_POSITIONS, hd]), pos), [1]); // [batch, 1, seq, hd]
  const cosT = gatherTable('rope.cos', t.cos);
  const sinT = gatherTable('rope.sin', t.sin);
  const rope = (q: string) => {
    const a = g.slice(q, [0], [hd / 2], [3]);
    const b = g.slice(q, [hd / 2], [hd], [3]);
    return g.add(g.mul(q, cosT), g.mul(g.concat([g.op('Neg', [b]), a], 3), sinT));
  };
  const heads = (q: string, n: number) => g.transpose(g.reshape(q, [0, 0, n, hd]), [0, 2, 1, 3]); // [b, n, seq, hd]

  const presentK: string[] = [];
  const presentV: string[] = [];
  for (let l = 0; l < s.layers; l++) {
    const name = `model.layers.${l}`;
    const h = rmsNorm(g, p, x, `${name}.input_layernorm`, s.hidden);
    const q = rope(heads(linear(g, p, h, `${name}.self_attn.q_proj`, s.hidden, s.hidden), s.heads));
    const k = rope(heads(linear(g, p, h, `${name}.self_attn.k_proj`, s.hidden, s.kvHeads * hd), s.kvHeads));
    const vv = heads(linear(g, p, h, `${name}.self_attn.v_proj`, s.hidden, s.kvHeads * hd), s.kvHeads);
    const keys = withPast ? g.concat([io.pastK![l]!, k], 2) : g.identity(k);
    const values = withPast ? g.concat([io.pastV![l]!, vv], 2) : g.identity(vv);
    presentK.push(keys);
    presentV.push(values);
    // GQA: query head kv·groups + j uses kv head kv. q [b, kv, groups, seq, hd] against k [b, kv, 1, total, hd].
    const q5 = g.reshape(q, [0, s.kvHeads, groups, -1, hd]);
    const k5 = g.unsqueeze(keys, [2]);
    const v5 = g.unsqueeze(values, [2]);
    const scores = g.mul(g.matmul(q5, g.transpose(k5, [0, 1, 2, 4, 3])), g.constF([1 / Math.sqrt(hd)], []));
    const probs = g.softmax(g.where(allowed, scores, negative), -1);
    const ctx = g.reshape(g.matmul(probs, v5), [0, s.heads, -1, hd]); // [b, heads, seq, hd]
    const merged = g.reshape(g.transpose(ctx, [0, 2, 1, 3]), [0, 0, s.hidden]);
    x = g.add(x, linear(g, p, merged, `${name}.self_attn.o_proj`, s.hidden, s.hidden, { bias: false }));
    const h2 = rmsNorm(g, p, x, `${name}.post_attention_layernorm`, s.hidden);
    const gate = linear(g, p, h2, `${name}.mlp.gate_proj`, s.hidden, s.intermediate, { bias: false });
    const up = linear(g, p, h2, `${name}.mlp.up_proj`, s.hidden, s.intermediate, { bias: false });
    const act = g.mul(gate, g.sigmoid(gate)); // SiLU
    x = g.add(x, linear(g, p, g.mul(act, up), `${name}.mlp.down_proj`, s.intermediate, s.hidden, { bias: false }));
  }
  const out = rmsNorm(g, p, x, 'model.norm', s.hidden);
  const w = g.initializer('lm_head.weight', p.get('lm_head.weight', [s.hidden, v.size], 'matrix', 3), [s.hidden, v.size]);
  return { logits: g.add(g.matmul(out, w), g.initializer('lm_head.prior', t.prior, [v.size])), presentK, presentV };
}

/** Declares the decoder inputs (with or without past) on a top-level graph. */
function decoderInputs(g: GraphBuilder, s: HfDecoderSpec, withPast: boolean): DecoderInputs {
  const hd = s.hidden / s.heads;
  const first = s.inputsEmbeds
    ? g.input('inputs_embeds', 'FLOAT', ['batch_size', 'sequence_length', s.hidden])
    : g.input('input_ids', 'INT64', ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', 'INT64', ['batch_size', 'total_sequence_length']);
  const pos = g.input('position_ids', 'INT64', ['batch_size', 'sequence_length']);
  if (!withPast) return { first, mask, pos };
  const pastK: string[] = [];
  const pastV: string[] = [];
  for (let l = 0; l < s.layers; l++) {
    pastK.push(g.input(`past_key_values.${l}.key`, 'FLOAT', ['batch_size', s.kvHeads, 'past_sequence_length', hd]));
    pastV.push(g.input(`past_key_values.${l}.value`, 'FLOAT', ['batch_size', s.kvHeads, 'past_sequence_length', hd]));
  }
  return { first, mask, pos, pastK, pastV };
}

/** Declares logits and present.* as outputs named `${prefix}logits`, `${prefix}present.{l}.key|value`. */
function decoderOutputs(g: GraphBuilder, s: HfDecoderSpec, v: HfVocab, o: DecoderOutputs, prefix = ''): void {
  const hd = s.hidden / s.heads;
  g.output(o.logits, `${prefix}logits`, 'FLOAT', ['batch_size', 'sequence_length', v.size]);
  for (let l = 0; l < s.layers; l++) {
    g.output(o.presentK[l]!, `${prefix}present.${l}.key`, 'FLOAT', ['batch_size', s.kvHeads, 'total_sequence_length', hd]);
    g.output(o.presentV[l]!, `${prefix}present.${l}.value`, 'FLOAT', ['batch_size', s.kvHeads, 'total_sequence_length', hd]);
  }
}

/** A single decoder file: with past (`model.onnx`, `decoder_with_past_model.onnx`) or without (`decoder_model.onnx`). */
function buildDecoder(p: ParamStore, s: HfDecoderSpec, v: HfVocab, withPast = true): GraphBuilder {
  const g = new GraphBuilder(`${s.folder}-decoder${withPast ? '' : '-no-past'}`);
  decoderOutputs(g, s, v, decoderBody(g, p, s, v, decoderTables(s, v), decoderInputs(g, s, withPast)));
  return g;
}

/** The element type of the merged decoder's `use_cache_branch` (BOOL as Optimum writes it; others only to test the check). */
export type UseCacheBranchType = 'BOOL' | 'INT64';

/**
 * Optimum's merged decoder (`decoder_model_merged.onnx`): the inputs of the with-past decoder plus
 * `use_cache_branch` [1], and one `If` over it whose then-branch is the with-past decoder and whose else-branch
 * is the no-past decoder (it ignores past_key_values). Weights are initializers of the outer graph, read by both.
 */
export function buildMergedDecoder(p: ParamStore, s: HfDecoderSpec, v: HfVocab, useCacheBranchType: UseCacheBranchType = 'BOOL'): GraphBuilder {
  const g = new GraphBuilder(`${s.folder}-decoder-merged`);
  const io = decoderInputs(g, s, true);
  const flag = g.input('use_cache_branch', useCacheBranchType, [1]);
  const cond = g.squeeze(useCacheBranchType === 'BOOL' ? flag : g.cast(flag, 'BOOL'), [0]);
  const t = decoderTables(s, v);
  const withPast = g.subgraph('decoder_with_past');
  decoderOutputs(withPast, s, v, decoderBody(withPast, p, s, v, t, io), 'with_past.');
  const noPast = g.subgraph('decoder_no_past');
  decoderOutputs(noPast, s, v, decoderBody(noPast, p, s, v, t, { first: io.first, mask: io.mask, pos: io.pos }), 'no_past.');
  const names = ['logits', ...Array.from({ length: s.layers }, (_, l) => [`present.${l}.key`, `present.${l}.value`]).flat()];
  g.node('If', [cond], { then_branch: attr.graph(withPast), else_branch: attr.graph(noPast) }, names);
  decoderOutputs(g, s, v, { logits: 'logits', presentK: names.filter((n) => n.endsWith('.key')), presentV: names.filter((n) => n.endsWith('.value')) });
  return g;
}

function buildEmbedTokens(p: ParamStore, s: HfDecoderSpec, v: HfVocab): GraphBuilder {
  const g = new GraphBuilder(`${s.folder}-embed-tokens`);
  const ids = g.input('input_ids', 'INT64', ['batch_size', 'sequence_length']);
  const table = g.initializer('model.embed_tokens.weight', p.get('model.embed_tokens.weight', [v.size, s.hidden], 'matrix', 4), [v.size, s.hidden]);
  g.output(g.gather(table, ids), 'inputs_embeds', 'FLOAT', ['batch_size', 'sequence_length', s.hidden]);
  return g;
}

const json = (o: unknown) => Buffer.from(`${JSON.stringify(o, null, 2)}\n`);

/** The config.json a Qwen2 export carries (the fields the loader and `cornserve models check` read). */
export function qwen2Config(s: HfDecoderSpec, v: HfVocab, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2', hidden_size: s.hidden, intermediate_size: s.intermediate,
    num_attention_heads: s.heads, num_key_value_heads: s.kvHeads, num_hidden_layers: s.layers, vocab_size: v.size,
    max_position_embeddings: MAX_POSITIONS, rope_theta: ROPE_THETA, rms_norm_eps: RMS_EPS, hidden_act: 'silu',
    tie_word_embeddings: false, torch_dtype: 'float32', bos_token_id: v.specials['<|endoftext|>'], eos_token_id: v.specials['<|im_end|>'],
    ...extra,
  };
}

/** Adds the decoder part files (config, generation config, tokenizer, ONNX) to `files`. */
export function addHfDecoderFiles(files: Map<string, Uint8Array>, s: HfDecoderSpec, p: ParamStore, config: Record<string, unknown>): HfVocab {
  const v = hfVocab(s.extraSpecials);
  const { tokenizer, tokenizerConfig } = hfTokenizerFiles(s.extraSpecials, s.chatTemplate);
  files.set('config.json', json(config));
  files.set('generation_config.json', json({
    bos_token_id: v.specials['<|endoftext|>'], eos_token_id: [v.specials['<|im_end|>'], v.specials['<|endoftext|>']],
    pad_token_id: v.specials['<|endoftext|>'], do_sample: false,
  }));
  files.set('tokenizer.json', json(tokenizer));
  files.set('tokenizer_config.json', json(tokenizerConfig));
  if (s.inputsEmbeds) {
    files.set('onnx/embed_tokens.onnx', buildEmbedTokens(p, s, v).toBytes());
    files.set('onnx/decoder_model_merged.onnx', buildDecoder(p, s, v).toBytes());
  } else if (s.layout === 'merged') {
    files.set('onnx/decoder_model_merged.onnx', buildMergedDecoder(p, s, v).toBytes());
  } else if (s.layout === 'pair') {
    files.set('onnx/decoder_model.onnx', buildDecoder(p, s, v, false).toBytes());
    files.set('onnx/decoder_with_past_model.onnx', buildDecoder(p, s, v).toBytes());
  } else {
    const decoder = buildDecoder(p, s, v);
    files.set('onnx/model.onnx', decoder.toBytes());
    // The transformers.js `_fp16` variant: float16 weights and compute, float32 I/O (keep_io_types).
    if (s.fp16) files.set('onnx/model_fp16.onnx', float16Bytes(decoder));
  }
  return v;
}

export function buildHfDecoder(s: HfDecoderSpec = TINY_QWEN2): BuiltModel {
  const p = new ParamStore(s.seed);
  const files = new Map<string, Uint8Array>();
  addHfDecoderFiles(files, s, p, qwen2Config(s, hfVocab(s.extraSpecials)));
  return { folder: s.folder, seed: s.seed, files };
}
