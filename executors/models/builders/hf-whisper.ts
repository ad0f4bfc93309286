/**
 * tiny-whisper: a random-weight Whisper-style audio encoder in the Hugging Face / Optimum layout, as an export of
 * a Whisper model's encoder is written:
 *
 *   config.json (model_type whisper)  preprocessor_config.json (WhisperFeatureExtractor)  onnx/encoder_model.onnx
 *
 * Architecture (Whisper encoder): conv1 (k3, pad 1) → GELU → conv2 (k3, stride 2, pad 1) → GELU → + sinusoidal
 * positions → pre-LN blocks (attention: q/v/out with bias, k without; GELU MLP) → layer_norm.
 * Graph I/O (Optimum's names): input_features [batch, n_mels, 3000] f32 → last_hidden_state [batch, 1500, d_model].
 */
import { GraphBuilder, attr } from '../onnx/graph-builder.js';
import { ParamStore, linear, sinusoids } from '../onnx/layers.js';
import type { BuiltModel } from './common.js';

export const TINY_WHISPER = { folder: 'tiny-whisper', seed: 6301, nMels: 80, dModel: 64, heads: 4, layers: 2, ffn: 128, frames: 3000 };
type Spec = typeof TINY_WHISPER;

function buildEncoder(s: Spec): GraphBuilder {
  const p = new ParamStore(s.seed);
  const g = new GraphBuilder(`${s.folder}-encoder`);
  const D = s.dModel;
  const hd = D / s.heads;
  const positions = s.frames / 2;
  const feats = g.input('input_features', 'FLOAT', ['batch_size', s.nMels, s.frames]);
  const conv = (x: string, name: string, din: number, stride: number) => g.gelu(g.op('Conv', [
    x,
    g.initializer(`${name}.weight`, p.get(`${name}.weight`, [D, din * 3], 'matrix'), [D, din, 3]),
    g.initializer(`${name}.bias`, p.get(`${name}.bias`, [D], 'bias'), [D]),
  ], { strides: attr.ints([stride]), pads: attr.ints([1, 1]) }));
  const h = conv(conv(feats, 'encoder.conv1', s.nMels, 1), 'encoder.conv2', D, 2); // [b, D, 1500]
  let x = g.add(g.transpose(h, [0, 2, 1]), g.initializer('encoder.embed_positions.weight', sinusoids(positions, D), [positions, D]));
  const ln = (t: string, name: string) => g.layerNorm(t, g.initializer(`${name}.weight`, p.get(`${name}.weight`, [D], 'scale'), [D]), g.initializer(`${name}.bias`, p.get(`${name}.bias`, [D], 'bias'), [D]), 1e-5);
  const heads = (t: string) => g.transpose(g.reshape(t, [0, 0, s.heads, hd]), [0, 2, 1, 3]);
  for (let l = 0; l < s.layers; l++) {
    const name = `encoder.layers.${l}`;
    const a = ln(x, `${name}.self_attn_layer_norm`);
    const q = heads(linear(g, p, a, `${name}.self_attn.q_proj`, D, D));
    const k = heads(linear(g, p, a, `${name}.self_attn.k_proj`, D, D, { bias: false }));
    const v = heads(linear(g, p, a, `${name}.self_attn.v_proj`, D, D));
    const probs = g.softmax(g.mul(g.matmul(q, g.transpose(k, [0, 1, 3, 2])), g.constF([1 / Math.sqrt(hd)], [])), -1);
    x = g.add(x, linear(g, p, g.reshape(g.transpose(g.matmul(probs, v), [0, 2, 1, 3]), [0, 0, D]), `${name}.self_attn.out_proj`, D, D));
    const m = ln(x, `${name}.final_layer_norm`);
    x = g.add(x, linear(g, p, g.gelu(linear(g, p, m, `${name}.fc1`, D, s.ffn)), `${name}.fc2`, s.ffn, D));
  }
  g.output(ln(x, 'encoder.layer_norm'), 'last_hidden_state', 'FLOAT', ['batch_size', positions, D]);
  return g;
}

const json = (o: unknown) => Buffer.from(`${JSON.stringify(o, null, 2)}\n`);

export function buildHfWhisper(s: Spec = TINY_WHISPER): BuiltModel {
  const files = new Map<string, Uint8Array>();
  files.set('config.json', json({
    architectures: ['WhisperForConditionalGeneration'], model_type: 'whisper', d_model: s.dModel, encoder_layers: s.layers,
    encoder_attention_heads: s.heads, encoder_ffn_dim: s.ffn, num_mel_bins: s.nMels, max_source_positions: s.frames / 2,
    activation_function: 'gelu', torch_dtype: 'float32',
  }));
  files.set('preprocessor_config.json', json({
    feature_extractor_type: 'WhisperFeatureExtractor', feature_size: s.nMels, sampling_rate: 16000, hop_length: 160, n_fft: 400,
    chunk_length: 30, n_samples: 480000, nb_max_frames: s.frames, padding_side: 'right', padding_value: 0.0, return_attention_mask: false,
    processor_class: 'WhisperProcessor',
  }));
  files.set('onnx/encoder_model.onnx', buildEncoder(s).toBytes());
  return { folder: s.folder, seed: s.seed, files };
}
