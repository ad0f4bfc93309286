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
import { GraphBuilder } from '../onnx/graph-builder.js';
import { float16Bytes } from '../onnx/float16.js';
import { ParamStore, linear } from '../onnx/layers.js';
import type { BuiltModel } from './common.js';

export interface HfDecoderSpec {
  folder: string;
  seed: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  layers: number;
  intermediate: number;
  /** Split export (embed_tokens.onnx + decoder_model_merged.onnx taking inputs_embeds). */
  inputsEmbeds?: boolean;
  /** Extra special tokens (e.g. the Qwen2-VL vision markers). */
  extraSpecials?: readonly string[];
  /** Also write `onnx/model_fp16.onnx` (decoder-only export). */
  fp16?: boolean;
  /** tokenizer_config.json's chat_template (default: the Qwen2-Instruct ChatML template). */
  chatTemplate?: string;
}

export const TINY_QWEN2: HfDecoderSpec = { folder: 'tiny-qwen2', seed: 5101, hidden: 64, heads: 4, kvHeads: 2, layers: 2, intermediate: 128, fp16: true };

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

function buildDecoder(p: ParamStore, s: HfDecoderSpec, v: HfVocab): GraphBuilder {
  const g = new GraphBuilder(`${s.folder}-decoder`);
  const hd = s.hidden / s.heads;
  const groups = s.heads / s.kvHeads;
  const table = () => g.initializer('model.embed_tokens.weight', p.get('model.embed_tokens.weight', [v.size, s.hidden], 'matrix', 4), [v.size, s.hidden]);
  let x = s.inputsEmbeds ? g.input('inputs_embeds', 'FLOAT', ['batch_size', 'sequence_length', s.hidden]) : '';
  const ids = s.inputsEmbeds ? '' : g.input('input_ids', 'INT64', ['batch_size', 'sequence_length']);
  const mask = g.input('attention_mask', 'INT64', ['batch_size', 'total_sequence_length']);
  const pos = g.input('position_ids', 'INT64', ['batch_size', 'sequence_length']);
  const pastK: string[] = [];
  const pastV: string[] = [];
  for (let l = 0; l < s.layers; l++) {
    pastK.push(g.input(`past_key_values.${l}.key`, 'FLOAT', ['batch_size', s.kvHeads, 'past_sequence_length', hd]));
    pastV.push(g.input(`past_key_values.${l}.value`, 'FLOAT', ['batch_size', s.kvHeads, 'past_sequence_length', hd]));
  }
  if (!s.inputsEmbeds) x = g.gather(table(), ids);

  // Allowed (query i, key j): attention_mask[j] = 1 and j ≤ past + i. Shape [batch, 1, 1, seq, total].
  const seq = g.shape(pos, 1, 2);
  const past = g.shape(pastK[0]!, 2, 3);
  const total = g.shape(mask, 1, 2);
  const range = (n: string) => g.op('Range', [g.constI64([0], []), g.squeeze(n, [0]), g.constI64([1], [])]);
  const qAbs = g.add(range(seq), g.squeeze(past, [0]));
  const causal = g.op('LessOrEqual', [g.unsqueeze(range(total), [0]), g.unsqueeze(qAbs, [1])]); // [seq, total]
  const allowed = g.op('And', [g.unsqueeze(g.cast(mask, 'BOOL'), [1, 2, 3]), causal]);
  const negative = g.constF([-1e9], []);

  const { cos, sin } = ropeTables(hd);
  const gatherTable = (name: string, data: Float32Array) =>
    g.unsqueeze(g.gather(g.initializer(name, data, [MAX_POSITIONS, hd]), pos), [1]); // [batch, 1, seq, hd]
  const cosT = gatherTable('rope.cos', cos);
  const sinT = gatherTable('rope.sin', sin);
  const rope = (t: string) => {
    const a = g.slice(t, [0], [hd / 2], [3]);
    const b = g.slice(t, [hd / 2], [hd], [3]);
    return g.add(g.mul(t, cosT), g.mul(g.concat([g.op('Neg', [b]), a], 3), sinT));
  };
  const heads = (t: string, n: number) => g.transpose(g.reshape(t, [0, 0, n, hd]), [0, 2, 1, 3]); // [b, n, seq, hd]

  for (let l = 0; l < s.layers; l++) {
    const name = `model.layers.${l}`;
    const h = rmsNorm(g, p, x, `${name}.input_layernorm`, s.hidden);
    const q = rope(heads(linear(g, p, h, `${name}.self_attn.q_proj`, s.hidden, s.hidden), s.heads));
    const k = rope(heads(linear(g, p, h, `${name}.self_attn.k_proj`, s.hidden, s.kvHeads * hd), s.kvHeads));
    const vv = heads(linear(g, p, h, `${name}.self_attn.v_proj`, s.hidden, s.kvHeads * hd), s.kvHeads);
    const keys = g.concat([pastK[l]!, k], 2);
    const values = g.concat([pastV[l]!, vv], 2);
    g.output(keys, `present.${l}.key`, 'FLOAT', ['batch_size', s.kvHeads, 'total_sequence_length', hd]);
    g.output(values, `present.${l}.value`, 'FLOAT', ['batch_size', s.kvHeads, 'total_sequence_length', hd]);
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
  g.output(g.add(g.matmul(out, w), g.initializer('lm_head.prior', lmHeadPrior(v), [v.size])), 'logits', 'FLOAT', ['batch_size', 'sequence_length', v.size]);
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
