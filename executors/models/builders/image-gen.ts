/**
 * tiny-image-gen: embeddings [tokens, hidden] → image. Three graphs, driven by the TS loop in run.ts:
 *   prior:   mean-pool + MLP → a base 8x8 latent, resized (runtime `latent_sizes`) to the latent grid, + a condition vector;
 *   denoise: one refinement step latent → latent + step_scale * f(latent, cond_latent, cond, t) (run num_inference_steps times);
 *   decoder: conv + 2 ConvTranspose(x2) upsampling blocks (+ a 1x1 skip from the latent) → sigmoid RGB, resized
 *            (runtime `image_sizes`) to exactly H x W.
 */
import { GraphBuilder } from '../onnx/graph-builder.js';
import { ParamStore, linear } from '../onnx/layers.js';
import type { ManifestInput } from '../manifest.js';
import { type BuiltModel, emitGraph } from './common.js';

export const IMAGE_GEN = {
  seed: 3003,
  modelId: 'cornserve/tiny-image-gen',
  hidden: 256,
  condDim: 128,
  latentChannels: 8,
  baseLatent: 8,
  downsample: 4,
  width: 32,
  maxSide: 1024,
  defaultSteps: 4,
  maxSteps: 100,
};

function convW(g: GraphBuilder, p: ParamStore, name: string, cout: number, cin: number, k: number, transposed = false) {
  const dims = transposed ? [cin, cout, k, k] : [cout, cin, k, k];
  const w = g.initializer(`${name}.weight`, p.get(`${name}.weight`, [dims[0]!, dims[1]! * k * k], 'matrix'), dims);
  const b = g.initializer(`${name}.bias`, p.get(`${name}.bias`, [cout], 'bias'), [cout]);
  return [w, b] as const;
}

function conv3(g: GraphBuilder, p: ParamStore, x: string, name: string, cin: number, cout: number): string {
  const [w, b] = convW(g, p, name, cout, cin, 3);
  return g.conv(x, w, b, { pads: [1, 1, 1, 1] });
}

function up2(g: GraphBuilder, p: ParamStore, x: string, name: string, cin: number, cout: number): string {
  const [w, b] = convW(g, p, name, cout, cin, 4, true);
  return g.convTranspose(x, w, b, { strides: [2, 2], pads: [1, 1, 1, 1] });
}

function buildPrior(p: ParamStore): GraphBuilder {
  const { hidden, condDim, latentChannels: c, baseLatent: b } = IMAGE_GEN;
  const g = new GraphBuilder('tiny-image-gen-prior');
  const emb = g.input('embeddings', 'FLOAT', ['tokens', hidden]);
  const sizes = g.input('latent_sizes', 'INT64', [4]);
  const pooled = g.reduceMean(emb, [0], true); // [1, hidden]
  const h = g.gelu(linear(g, p, pooled, 'prior.fc1', hidden, hidden));
  const base = g.reshape(g.tanh(linear(g, p, h, 'prior.fc2', hidden, c * b * b)), [1, c, b, b]);
  g.output(g.resize(base, sizes, 'linear'), 'cond_latent', 'FLOAT', [1, c, 'lh', 'lw']);
  g.output(g.gelu(linear(g, p, h, 'prior.cond', hidden, condDim)), 'cond', 'FLOAT', [1, condDim]);
  return g;
}

function buildDenoise(p: ParamStore): GraphBuilder {
  const { condDim, latentChannels: c, width } = IMAGE_GEN;
  const g = new GraphBuilder('tiny-image-gen-denoise');
  const latent = g.input('latent', 'FLOAT', [1, c, 'lh', 'lw']);
  const condLatent = g.input('cond_latent', 'FLOAT', [1, c, 'lh', 'lw']);
  const cond = g.input('cond', 'FLOAT', [1, condDim]);
  const t = g.input('timestep', 'FLOAT', [1]);
  const stepScale = g.input('step_scale', 'FLOAT', [1]);
  const x = conv3(g, p, g.concat([latent, condLatent], 1), 'denoise.conv1', 2 * c, width);
  const tEmb = g.mul(g.unsqueeze(t, [0]), g.constF(p.get('denoise.t_embed', [width], 'bias').map((v) => v * 50), [1, width]));
  const bias = g.reshape(g.add(linear(g, p, cond, 'denoise.cond', condDim, width), tEmb), [1, width, 1, 1]);
  const h = conv3(g, p, g.gelu(g.add(x, bias)), 'denoise.conv2', width, width);
  const delta = conv3(g, p, g.gelu(h), 'denoise.conv3', width, c);
  // Pull toward the conditioned latent, plus a learned correction.
  const target = g.add(condLatent, g.tanh(delta));
  g.output(g.add(latent, g.mul(g.sub(target, latent), stepScale)), 'next_latent', 'FLOAT', [1, c, 'lh', 'lw']);
  return g;
}

function buildDecoder(p: ParamStore): GraphBuilder {
  const { latentChannels: c, width } = IMAGE_GEN;
  const g = new GraphBuilder('tiny-image-gen-decoder');
  const latent = g.input('latent', 'FLOAT', [1, c, 'lh', 'lw']);
  const sizes = g.input('image_sizes', 'INT64', [4]);
  let x = g.gelu(conv3(g, p, latent, 'decoder.conv_in', c, width));
  x = g.gelu(up2(g, p, x, 'decoder.up1', width, width / 2));
  x = g.gelu(up2(g, p, x, 'decoder.up2', width / 2, width / 2));
  const detail = g.resize(conv3(g, p, x, 'decoder.conv_out', width / 2, 3), sizes, 'linear');
  // A 1x1 skip from the latent carries the smooth, conditioned colour layout to full size.
  const [sw, sb] = convW(g, p, 'decoder.skip', 3, c, 1);
  const skip = g.resize(g.mul(g.conv(latent, sw, sb), g.constF([3], [])), sizes, 'linear');
  g.output(g.sigmoid(g.add(detail, skip)), 'image', 'FLOAT', [1, 3, 'height', 'width']);
  return g;
}

export function buildImageGen(): BuiltModel {
  const p = new ParamStore(IMAGE_GEN.seed);
  const files = new Map<string, Uint8Array>();
  const manifest: ManifestInput = {
    schema_version: 1,
    name: 'tiny-image-gen',
    family: 'image-generator',
    modalities: ['image'],
    dtype: 'float32',
    graphs: {
      prior: emitGraph(files, buildPrior(p), 'prior.onnx'),
      denoise: emitGraph(files, buildDenoise(p), 'denoise.onnx'),
      decoder: emitGraph(files, buildDecoder(p), 'decoder.onnx'),
    },
    model_ids: { [IMAGE_GEN.modelId]: { hidden_size: IMAGE_GEN.hidden, graphs: {} } },
    generation: {
      image: {
        latent_channels: IMAGE_GEN.latentChannels,
        latent_downsample: IMAGE_GEN.downsample,
        max_height: IMAGE_GEN.maxSide,
        max_width: IMAGE_GEN.maxSide,
        default_steps: IMAGE_GEN.defaultSteps,
        max_steps: IMAGE_GEN.maxSteps,
      },
    },
    config: { input_hidden: IMAGE_GEN.hidden, cond_dim: IMAGE_GEN.condDim },
  };
  return { folder: 'tiny-image-gen', seed: IMAGE_GEN.seed, files, manifest };
}
