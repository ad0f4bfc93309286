/**
 * tiny-clip and tiny-siglip: random-weight vision towers in the Hugging Face / Optimum / transformers.js layout,
 * the way an export of `CLIPVisionModelWithProjection` / `SiglipVisionModel` is written:
 *
 *   config.json (model_type clip|siglip, vision_config, projection_dim)  preprocessor_config.json  onnx/vision_model.onnx
 *
 * CLIP: patch conv (no bias) → [class token; patches] + learned positions → pre_layrnorm → pre-LN blocks
 * (attention with biases, quick_gelu MLP) → last_hidden_state; image_embeds = post_layernorm(token 0) @
 * visual_projection. Preprocessing: resize shortest edge (bicubic), center crop, rescale, normalise (CLIP mean/std).
 * SigLIP: patch conv (bias) + learned positions → blocks (tanh-GELU MLP) → post_layernorm = last_hidden_state;
 * pooler_output = the attention-pooling head (a learned probe attends over the tokens, then LN + MLP residual).
 * Preprocessing: resize to size (bilinear), no crop, rescale, mean/std 0.5.
 *
 * Graph I/O (Optimum's names): pixel_values [batch, 3, H, W] f32 → image_embeds [batch, projection_dim] (CLIP) or
 * pooler_output [batch, hidden] (SigLIP), and last_hidden_state [batch, tokens, hidden].
 */
import type { GraphBuilder as GB } from '../onnx/graph-builder.js';
import { GraphBuilder, attr } from '../onnx/graph-builder.js';
import { ParamStore, linear } from '../onnx/layers.js';
import type { BuiltModel } from './common.js';

export interface HfVisionSpec {
  folder: string;
  family: 'clip' | 'siglip';
  seed: number;
  imageSize: number;
  patchSize: number;
  hidden: number;
  heads: number;
  layers: number;
  intermediate: number;
  /** CLIP only: visual_projection output size. */
  projectionDim?: number;
}

export const TINY_CLIP: HfVisionSpec = {
  folder: 'tiny-clip', family: 'clip', seed: 6101, imageSize: 32, patchSize: 8, hidden: 64, heads: 4, layers: 2, intermediate: 128, projectionDim: 48,
};
export const TINY_SIGLIP: HfVisionSpec = {
  folder: 'tiny-siglip', family: 'siglip', seed: 6201, imageSize: 32, patchSize: 8, hidden: 64, heads: 4, layers: 2, intermediate: 128,
};

const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073];
const CLIP_STD = [0.26862954, 0.26130258, 0.27577711];
const LN_EPS = { clip: 1e-5, siglip: 1e-6 };

const ln = (g: GB, p: ParamStore, x: string, name: string, d: number, eps: number) =>
  g.layerNorm(x, g.initializer(`${name}.weight`, p.get(`${name}.weight`, [d], 'scale'), [d]), g.initializer(`${name}.bias`, p.get(`${name}.bias`, [d], 'bias'), [d]), eps);

/** [b, T, D] → [b, heads, T, hd]. */
const splitHeads = (g: GB, t: string, heads: number, hd: number) => g.transpose(g.reshape(t, [0, 0, heads, hd]), [0, 2, 1, 3]);

/** Scaled dot-product attention of q over k/v ([b, T, D] each after projection), merged back to [b, Tq, D]. */
function attend(g: GB, p: ParamStore, q: string, kv: string, name: string, s: HfVisionSpec): string {
  const hd = s.hidden / s.heads;
  const Q = splitHeads(g, linear(g, p, q, `${name}.q_proj`, s.hidden, s.hidden), s.heads, hd);
  const K = splitHeads(g, linear(g, p, kv, `${name}.k_proj`, s.hidden, s.hidden), s.heads, hd);
  const V = splitHeads(g, linear(g, p, kv, `${name}.v_proj`, s.hidden, s.hidden), s.heads, hd);
  const probs = g.softmax(g.mul(g.matmul(Q, g.transpose(K, [0, 1, 3, 2])), g.constF([1 / Math.sqrt(hd)], [])), -1);
  const ctx = g.reshape(g.transpose(g.matmul(probs, V), [0, 2, 1, 3]), [0, 0, s.hidden]);
  return linear(g, p, ctx, `${name}.out_proj`, s.hidden, s.hidden);
}

/** CLIP's quick_gelu x·σ(1.702x); SigLIP's gelu_pytorch_tanh. */
function act(g: GB, x: string, family: HfVisionSpec['family']): string {
  if (family === 'clip') return g.mul(x, g.sigmoid(g.mul(x, g.constF([1.702], []))));
  return g.op('Gelu', [x], { approximate: attr.s('tanh') });
}

function mlp(g: GB, p: ParamStore, x: string, name: string, s: HfVisionSpec): string {
  return linear(g, p, act(g, linear(g, p, x, `${name}.fc1`, s.hidden, s.intermediate), s.family), `${name}.fc2`, s.intermediate, s.hidden);
}

/** [1, 1, D] broadcast to [batch, 1, D] (batch from x's first dim). */
function perBatch(g: GB, x: string, v: string, d: number): string {
  return g.op('Expand', [v, g.concat([g.shape(x, 0, 1), g.constI64([1, d])], 0)]);
}

function buildTower(s: HfVisionSpec): GraphBuilder {
  const p = new ParamStore(s.seed);
  const g = new GraphBuilder(`${s.folder}-vision-model`);
  const D = s.hidden;
  const eps = LN_EPS[s.family];
  const grid = s.imageSize / s.patchSize;
  const pix = g.input('pixel_values', 'FLOAT', ['batch_size', 'num_channels', 'height', 'width']);
  const pre = 'vision_model.embeddings';
  const w = g.initializer(`${pre}.patch_embedding.weight`, p.get(`${pre}.patch_embedding.weight`, [D, 3 * s.patchSize ** 2], 'matrix'), [D, 3, s.patchSize, s.patchSize]);
  const convIn = [pix, w];
  if (s.family === 'siglip') convIn.push(g.initializer(`${pre}.patch_embedding.bias`, p.get(`${pre}.patch_embedding.bias`, [D], 'bias'), [D]));
  const patches = g.transpose(g.reshape(g.op('Conv', convIn, { strides: attr.ints([s.patchSize, s.patchSize]) }), [0, D, -1]), [0, 2, 1]);
  let x = patches;
  let tokens = grid * grid;
  if (s.family === 'clip') {
    const cls = g.initializer(`${pre}.class_embedding`, p.get(`${pre}.class_embedding`, [D], 'bias'), [1, 1, D]);
    x = g.concat([perBatch(g, pix, cls, D), patches], 1);
    tokens += 1;
  }
  x = g.add(x, g.initializer(`${pre}.position_embedding.weight`, p.get(`${pre}.position_embedding.weight`, [tokens, D], 'bias'), [tokens, D]));
  if (s.family === 'clip') x = ln(g, p, x, 'vision_model.pre_layrnorm', D, eps);
  for (let l = 0; l < s.layers; l++) {
    const name = `vision_model.encoder.layers.${l}`;
    const h = ln(g, p, x, `${name}.layer_norm1`, D, eps);
    x = g.add(x, attend(g, p, h, h, `${name}.self_attn`, s));
    x = g.add(x, mlp(g, p, ln(g, p, x, `${name}.layer_norm2`, D, eps), `${name}.mlp`, s));
  }
  const hiddenShape = ['batch_size', tokens, D];
  if (s.family === 'clip') {
    g.output(x, 'last_hidden_state', 'FLOAT', hiddenShape);
    const pooled = ln(g, p, g.gather(x, g.constI64([0], []), 1), 'vision_model.post_layernorm', D, eps);
    const proj = g.initializer('visual_projection.weight', p.get('visual_projection.weight', [D, s.projectionDim!], 'matrix'), [D, s.projectionDim!]);
    g.output(g.matmul(pooled, proj), 'image_embeds', 'FLOAT', ['batch_size', s.projectionDim!]);
    return g;
  }
  x = ln(g, p, x, 'vision_model.post_layernorm', D, eps);
  g.output(x, 'last_hidden_state', 'FLOAT', hiddenShape);
  // Attention-pooling head: probe [1, 1, D] attends over the tokens; LN + MLP residual; token 0.
  const head = 'vision_model.head';
  const probe = perBatch(g, pix, g.initializer(`${head}.probe`, p.get(`${head}.probe`, [D], 'bias'), [1, 1, D]), D);
  const pooled = attend(g, p, probe, x, `${head}.attention`, s);
  const out = g.add(pooled, mlp(g, p, ln(g, p, pooled, `${head}.layernorm`, D, eps), `${head}.mlp`, s));
  g.output(g.gather(out, g.constI64([0], []), 1), 'pooler_output', 'FLOAT', ['batch_size', D]);
  return g;
}

const json = (o: unknown) => Buffer.from(`${JSON.stringify(o, null, 2)}\n`);

function visionConfig(s: HfVisionSpec): Record<string, unknown> {
  return {
    model_type: `${s.family}_vision_model`, hidden_size: s.hidden, intermediate_size: s.intermediate, num_attention_heads: s.heads,
    num_hidden_layers: s.layers, image_size: s.imageSize, patch_size: s.patchSize, num_channels: 3,
    hidden_act: s.family === 'clip' ? 'quick_gelu' : 'gelu_pytorch_tanh', layer_norm_eps: LN_EPS[s.family],
    ...(s.projectionDim ? { projection_dim: s.projectionDim } : {}),
  };
}

export function buildHfVision(s: HfVisionSpec): BuiltModel {
  const files = new Map<string, Uint8Array>();
  const common = { do_convert_rgb: true, do_normalize: true, do_rescale: true, do_resize: true, rescale_factor: 1 / 255 };
  if (s.family === 'clip') {
    files.set('config.json', json({
      architectures: ['CLIPModel'], model_type: 'clip', projection_dim: s.projectionDim, torch_dtype: 'float32',
      vision_config: visionConfig(s),
    }));
    files.set('preprocessor_config.json', json({
      ...common, image_processor_type: 'CLIPImageProcessor', feature_extractor_type: 'CLIPFeatureExtractor',
      size: { shortest_edge: s.imageSize }, resample: 3, do_center_crop: true, crop_size: { height: s.imageSize, width: s.imageSize },
      image_mean: CLIP_MEAN, image_std: CLIP_STD,
    }));
  } else {
    files.set('config.json', json({ architectures: ['SiglipModel'], model_type: 'siglip', torch_dtype: 'float32', vision_config: visionConfig(s) }));
    files.set('preprocessor_config.json', json({
      ...common, image_processor_type: 'SiglipImageProcessor', size: { height: s.imageSize, width: s.imageSize }, resample: 2,
      image_mean: [0.5, 0.5, 0.5], image_std: [0.5, 0.5, 0.5],
    }));
  }
  files.set('onnx/vision_model.onnx', buildTower(s).toBytes());
  return { folder: s.folder, seed: s.seed, files };
}
