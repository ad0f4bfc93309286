/**
 * tiny-qwen2-vl: a random-weight Qwen2-VL-style vision-language model exported as three parts, in the
 * onnx-community / transformers.js layout of `onnx-community/Qwen2-VL-2B-Instruct`:
 *
 *   config.json (with vision_config, image_token_id, vision_start/end_token_id)  generation_config.json
 *   tokenizer.json (ChatML + vision specials)  tokenizer_config.json (Qwen2-VL chat_template)
 *   preprocessor_config.json (Qwen2VLImageProcessor)
 *   onnx/vision_encoder.onnx  onnx/embed_tokens.onnx  onnx/decoder_model_merged.onnx
 *
 * vision_encoder: `pixel_values [num_patches, 3·2·14·14]` (Qwen2-VL patches in 2×2 merge-window order, as the
 * image processor flattens them) + `grid_thw [1, 3]` (t, h, w in patches) → `image_features [num_patches / 4,
 * text hidden]`. One image per call. Patch embedding + learned row / column tables at positions computed in the
 * graph from grid_thw (real Qwen2-VL uses 2-D rotary embeddings here) → pre-LN blocks, attention within each
 * temporal frame → LayerNorm, 2×2 merge, MLP into the text hidden size (Qwen2-VL's PatchMerger).
 * embed_tokens + decoder_model_merged: the Qwen2 decoder of hf-decoder.ts taking inputs_embeds, with 1-D
 * position ids (real Qwen2-VL uses 3-D M-RoPE positions; see docs/models.md).
 */
import { GraphBuilder } from '../onnx/graph-builder.js';
import { ParamStore, layerNorm, linear, segmentMask, transformerBlock } from '../onnx/layers.js';
import type { BuiltModel } from './common.js';
import { type HfDecoderSpec, addHfDecoderFiles, hfVocab, qwen2Config } from './hf-decoder.js';

export const QWEN2_VL_SPECIALS = ['<|vision_start|>', '<|vision_end|>', '<|vision_pad|>', '<|image_pad|>', '<|video_pad|>'] as const;

/** Qwen2-VL-Instruct's chat template (tokenizer_config.json / chat_template.json), unchanged. */
export const QWEN2_VL_TEMPLATE =
  "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

export const TINY_QWEN2_VL = {
  text: {
    folder: 'tiny-qwen2-vl', seed: 5201, hidden: 64, heads: 4, kvHeads: 2, layers: 2, intermediate: 128,
    inputsEmbeds: true, extraSpecials: QWEN2_VL_SPECIALS, chatTemplate: QWEN2_VL_TEMPLATE,
  } satisfies HfDecoderSpec,
  vision: { dim: 32, heads: 2, mlpHidden: 64, depth: 2, patchSize: 14, temporalPatch: 2, merge: 2, maxGridSide: 128 },
  /** 56² .. 224² pixels: at most 16×16 patches for a square image, 128 along a side. */
  image: { minPixels: 56 * 56, maxPixels: 224 * 224 },
  mean: [0.48145466, 0.4578275, 0.40821073],
  std: [0.26862954, 0.26130258, 0.27577711],
};

function buildVisionEncoder(p: ParamStore, textHidden: number): GraphBuilder {
  const v = TINY_QWEN2_VL.vision;
  const patchDim = 3 * v.temporalPatch * v.patchSize * v.patchSize;
  const m = v.merge;
  const g = new GraphBuilder('tiny-qwen2-vl-vision-encoder');
  const pixels = g.input('pixel_values', 'FLOAT', ['num_patches', patchDim]);
  const grid = g.input('grid_thw', 'INT64', ['num_images', 3]);
  // Patch i of frame-major, merge-window order: j = i mod (h·w); window b = j div m², inside it r = j mod m²;
  // row = (b div (w/m))·m + r div m, col = (b mod (w/m))·m + r mod m; frame = i div (h·w).
  const int = (x: number) => g.constI64([x], []);
  const thw = g.gather(grid, int(0), 0); // [3]
  const h = g.gather(thw, int(1), 0);
  const w = g.gather(thw, int(2), 0);
  const hw = g.mul(h, w);
  const n = g.squeeze(g.shape(pixels, 0, 1), [0]);
  const i = g.op('Range', [int(0), n, int(1)]);
  const mod = (a: string, b: string) => g.op('Mod', [a, b]);
  const j = mod(i, hw);
  const frame = g.div(i, hw);
  const block = g.div(j, int(m * m));
  const inner = mod(j, int(m * m));
  const blocksPerRow = g.div(w, int(m));
  const row = g.add(g.mul(g.div(block, blocksPerRow), int(m)), g.div(inner, int(m)));
  const col = g.add(g.mul(mod(block, blocksPerRow), int(m)), mod(inner, int(m)));
  const table = (name: string) => g.initializer(name, p.get(name, [v.maxGridSide, v.dim], 'bias'), [v.maxGridSide, v.dim]);
  let x = linear(g, p, pixels, 'visual.patch_embed', patchDim, v.dim, { bias: false });
  x = g.add(g.add(x, g.gather(table('visual.pos_embed.row'), row)), g.gather(table('visual.pos_embed.col'), col));
  const mask = segmentMask(g, frame);
  for (let l = 0; l < v.depth; l++) x = transformerBlock(g, p, x, mask, `visual.blocks.${l}`, { dim: v.dim, heads: v.heads, mlpHidden: v.mlpHidden });
  const merged = g.reshape(layerNorm(g, p, x, 'visual.merger.ln_q', v.dim), [-1, v.dim * m * m]);
  const hidden = g.gelu(linear(g, p, merged, 'visual.merger.mlp.0', v.dim * m * m, v.dim * m * m));
  g.output(linear(g, p, hidden, 'visual.merger.mlp.2', v.dim * m * m, textHidden, { gain: 4 }), 'image_features', 'FLOAT', ['num_tokens', textHidden]);
  return g;
}

const json = (o: unknown) => Buffer.from(`${JSON.stringify(o, null, 2)}\n`);

export function buildHfVlm(): BuiltModel {
  const s = TINY_QWEN2_VL.text;
  const v = TINY_QWEN2_VL.vision;
  const p = new ParamStore(s.seed);
  const vocab = hfVocab(s.extraSpecials);
  const files = new Map<string, Uint8Array>();
  addHfDecoderFiles(files, s, p, qwen2Config(s, vocab, {
    architectures: ['Qwen2VLForConditionalGeneration'], model_type: 'qwen2_vl',
    image_token_id: vocab.specials['<|image_pad|>'], video_token_id: vocab.specials['<|video_pad|>'],
    vision_start_token_id: vocab.specials['<|vision_start|>'], vision_end_token_id: vocab.specials['<|vision_end|>'],
    vision_token_id: vocab.specials['<|vision_pad|>'],
    // 1-D positions: the decoder takes position_ids [batch, seq], not M-RoPE's [3, batch, seq].
    rope_scaling: null,
    vision_config: {
      depth: v.depth, embed_dim: v.dim, hidden_size: s.hidden, mlp_ratio: v.mlpHidden / v.dim, num_heads: v.heads,
      in_chans: 3, patch_size: v.patchSize, spatial_merge_size: v.merge, temporal_patch_size: v.temporalPatch, hidden_act: 'gelu',
    },
  }));
  files.set('preprocessor_config.json', json({
    do_convert_rgb: true, do_normalize: true, do_rescale: true, do_resize: true, rescale_factor: 1 / 255,
    image_mean: TINY_QWEN2_VL.mean, image_std: TINY_QWEN2_VL.std, resample: 3,
    min_pixels: TINY_QWEN2_VL.image.minPixels, max_pixels: TINY_QWEN2_VL.image.maxPixels,
    patch_size: v.patchSize, temporal_patch_size: v.temporalPatch, merge_size: v.merge,
    image_processor_type: 'Qwen2VLImageProcessor', processor_class: 'Qwen2VLProcessor',
  }));
  files.set('onnx/vision_encoder.onnx', buildVisionEncoder(p, s.hidden).toBytes());
  return { folder: s.folder, seed: s.seed, files };
}
