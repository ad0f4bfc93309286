/**
 * tiny-llama-gguf: a random-weight llama-architecture decoder as one GGUF file (`tiny-llama.gguf`), the way
 * llama.cpp's converter writes one: `general.*` and `llama.*` hyper-parameters, a byte-level BPE tokenizer
 * (`tokenizer.ggml.model` gpt2 with the Qwen2 pre-tokenizer: tiny-qwen2's vocabulary, merges and ChatML chat
 * template), and the tensors under llama.cpp's names (token_embd, blk.N.attn_q …, output_norm, output), F32.
 *
 * Readable output from random weights: hidden dimension 0 carries a constant through every layer (no layer writes
 * it), so after the final RMSNorm it is positive for every token; the output matrix's column 0 then adds a large
 * prior to printable bytes and merges and a large penalty to the rest (specials, control and non-ASCII bytes), so
 * greedy answers are plain text and run to max_tokens.
 */
import { writeGguf, gguf, type GgufTensor, type GgufValue } from '../gguf/writer.js';
import { ParamStore } from '../onnx/layers.js';
import { CHATML_TEMPLATE, MERGES, hfVocab } from './hf-decoder.js';
import type { BuiltModel, DecoderShape } from './common.js';

export interface GgufLlamaSpec extends DecoderShape {
  folder: string;
  file: string;
  context: number;
  /** general.architecture (a test writes one llama.cpp does not know). */
  architecture?: string;
}

export const TINY_LLAMA_GGUF: GgufLlamaSpec = {
  folder: 'tiny-llama-gguf', file: 'tiny-llama.gguf', seed: 6101, hidden: 64, heads: 4, kvHeads: 2, layers: 2, intermediate: 128, context: 2048,
};

/** llama.cpp token types. */
const NORMAL = 1;
const CONTROL = 3;
const PRIOR = 12;
/** Attention weights scaled up, so the answer depends on the whole prompt, not only on the last token. */
const GAIN = 3;

/** The tokenizer metadata: ids 0..255 the byte alphabet, then the merges, then the ChatML specials. */
function tokenizerMetadata(): { meta: Record<string, GgufValue>; tokens: string[]; printable: (id: number) => boolean } {
  const v = hfVocab();
  const tokens: string[] = [];
  const types: number[] = [];
  for (const [t, id] of Object.entries(v.vocab)) {
    tokens[id] = t;
    types[id] = NORMAL;
  }
  for (const [t, id] of Object.entries(v.specials)) {
    tokens[id] = t;
    types[id] = CONTROL;
  }
  const printable = (id: number) => (id < 256 ? (id >= 0x20 && id < 0x7f) || id === 0x0a : types[id] === NORMAL);
  return {
    tokens,
    printable,
    meta: {
      'tokenizer.ggml.model': gguf.str('gpt2'),
      'tokenizer.ggml.pre': gguf.str('qwen2'),
      'tokenizer.ggml.tokens': gguf.strs(tokens),
      'tokenizer.ggml.token_type': gguf.i32s(types),
      'tokenizer.ggml.merges': gguf.strs(MERGES.map(([a, b]) => `${a} ${b}`)),
      'tokenizer.ggml.eos_token_id': gguf.u32(v.specials['<|im_end|>']!),
      'tokenizer.ggml.padding_token_id': gguf.u32(v.specials['<|endoftext|>']!),
      'tokenizer.ggml.add_bos_token': gguf.bool(false),
      'tokenizer.chat_template': gguf.str(CHATML_TEMPLATE),
    },
  };
}

/** The GGUF bytes of `s`. */
export function ggufLlamaBytes(s: GgufLlamaSpec): Uint8Array {
  const p = new ParamStore(s.seed);
  const { meta, tokens, printable } = tokenizerMetadata();
  const n = tokens.length;
  const hd = s.hidden / s.heads;
  const kv = hd * s.kvHeads;
  const tensors: GgufTensor[] = [];
  /** A `[out, in]` weight (ggml dims [in, out]); `keepDim0` zeroes output row 0 so the constant dimension stays. */
  const weight = (name: string, out: number, inp: number, keepDim0 = false, gain = 1): void => {
    const data = p.get(name, [out, inp], 'matrix', gain);
    if (keepDim0) data.fill(0, 0, inp);
    tensors.push({ name, dims: [inp, out], data });
  };
  const norm = (name: string) => tensors.push({ name, dims: [s.hidden], data: p.get(name, [s.hidden], 'scale') });

  const embd = p.get('token_embd.weight', [n, s.hidden], 'matrix');
  for (let t = 0; t < n; t++) embd[t * s.hidden] = 1;
  tensors.push({ name: 'token_embd.weight', dims: [s.hidden, n], data: embd });
  for (let l = 0; l < s.layers; l++) {
    norm(`blk.${l}.attn_norm.weight`);
    weight(`blk.${l}.attn_q.weight`, s.hidden, s.hidden, false, GAIN);
    weight(`blk.${l}.attn_k.weight`, kv, s.hidden, false, GAIN);
    weight(`blk.${l}.attn_v.weight`, kv, s.hidden, false, GAIN);
    weight(`blk.${l}.attn_output.weight`, s.hidden, s.hidden, true, GAIN);
    norm(`blk.${l}.ffn_norm.weight`);
    weight(`blk.${l}.ffn_gate.weight`, s.intermediate, s.hidden);
    weight(`blk.${l}.ffn_up.weight`, s.intermediate, s.hidden);
    weight(`blk.${l}.ffn_down.weight`, s.hidden, s.intermediate, true);
  }
  norm('output_norm.weight');
  const out = p.get('output.weight', [n, s.hidden], 'matrix', 4);
  for (let t = 0; t < n; t++) out[t * s.hidden] = printable(t) ? PRIOR : -PRIOR;
  tensors.push({ name: 'output.weight', dims: [s.hidden, n], data: out });

  const arch = s.architecture ?? 'llama';
  return writeGguf({
    'general.architecture': gguf.str(arch),
    'general.name': gguf.str(s.folder),
    'general.alignment': gguf.u32(32),
    [`${arch}.context_length`]: gguf.u32(s.context),
    [`${arch}.embedding_length`]: gguf.u32(s.hidden),
    [`${arch}.block_count`]: gguf.u32(s.layers),
    [`${arch}.feed_forward_length`]: gguf.u32(s.intermediate),
    [`${arch}.attention.head_count`]: gguf.u32(s.heads),
    [`${arch}.attention.head_count_kv`]: gguf.u32(s.kvHeads),
    [`${arch}.attention.layer_norm_rms_epsilon`]: gguf.f32(1e-6),
    [`${arch}.rope.freq_base`]: gguf.f32(10_000),
    [`${arch}.rope.dimension_count`]: gguf.u32(hd),
    [`${arch}.vocab_size`]: gguf.u32(n),
    ...meta,
  }, tensors);
}

export function buildGgufLlama(s: GgufLlamaSpec = TINY_LLAMA_GGUF): BuiltModel {
  return { folder: s.folder, seed: s.seed, files: new Map([[s.file, ggufLlamaBytes(s)]]) };
}
