/**
 * tiny-audio: a Whisper-style audio encoder. log-mel [n_mels, frames] (computed in TS) → Conv1d(k3) + GELU →
 * Conv1d(k3, stride 2) + GELU → + sinusoidal positions → pre-LN transformer blocks → LN → features [ceil(frames/2), dim];
 * one projector graph per model id → embeddings [frames', hidden].
 */
import { GraphBuilder } from '../onnx/graph-builder.js';
import { ParamStore, layerNorm, sinusoids, transformerBlock } from '../onnx/layers.js';
import type { ManifestInput } from '../manifest.js';
import { type BuiltModel, buildProjector, emitGraph, idSlug } from './common.js';

export const AUDIO = {
  seed: 2002,
  sampleRate: 16000,
  nMels: 80,
  nFft: 512,
  winLength: 400,
  hopLength: 160,
  maxSeconds: 30,
  dim: 96,
  heads: 4,
  mlpHidden: 384,
  depth: 2,
  maxPositions: 1536,
  adapters: { 'cornserve/tiny-vlm-a': 256 } as Record<string, number>,
};

function conv1d(g: GraphBuilder, p: ParamStore, x: string, name: string, cin: number, cout: number, stride: number): string {
  const w = g.initializer(`${name}.weight`, p.get(`${name}.weight`, [cout, cin * 3], 'matrix'), [cout, cin, 3]);
  const b = g.initializer(`${name}.bias`, p.get(`${name}.bias`, [cout], 'bias'), [cout]);
  return g.conv(x, w, b, { strides: [stride], pads: [1, 1] });
}

function buildEncoder(p: ParamStore): GraphBuilder {
  const g = new GraphBuilder('tiny-audio-encoder');
  const mel = g.input('input_features', 'FLOAT', [AUDIO.nMels, 'mel_frames']);
  let x = g.gelu(conv1d(g, p, g.unsqueeze(mel, [0]), 'conv1', AUDIO.nMels, AUDIO.dim, 1));
  x = g.gelu(conv1d(g, p, x, 'conv2', AUDIO.dim, AUDIO.dim, 2));
  x = g.transpose(g.squeeze(x, [0]), [1, 0]); // [frames', dim]
  const table = g.initializer('pos_embed', sinusoids(AUDIO.maxPositions, AUDIO.dim), [AUDIO.maxPositions, AUDIO.dim]);
  const pos = g.sliceDynamic(table, g.constI64([0]), g.shape(x, 0, 1), g.constI64([0]));
  x = g.add(x, pos);
  for (let l = 0; l < AUDIO.depth; l++) {
    x = transformerBlock(g, p, x, undefined, `blocks.${l}`, { dim: AUDIO.dim, heads: AUDIO.heads, mlpHidden: AUDIO.mlpHidden });
  }
  g.output(layerNorm(g, p, x, 'ln_post', AUDIO.dim), 'features', 'FLOAT', ['frames', AUDIO.dim]);
  return g;
}

export function buildAudio(): BuiltModel {
  const p = new ParamStore(AUDIO.seed);
  const files = new Map<string, Uint8Array>();
  const model_ids: ManifestInput['model_ids'] = {};
  for (const [id, hidden] of Object.entries(AUDIO.adapters)) {
    const g = new GraphBuilder(`projector-${idSlug(id)}`);
    buildProjector(g, p, `projector.${idSlug(id)}`, AUDIO.dim, hidden);
    model_ids[id] = { hidden_size: hidden, graphs: { projector: emitGraph(files, g, `projector-${idSlug(id)}.onnx`) } };
  }
  const manifest: ManifestInput = {
    schema_version: 1,
    name: 'tiny-audio',
    family: 'audio-encoder',
    modalities: ['audio'],
    dtype: 'float32',
    graphs: { encoder: emitGraph(files, buildEncoder(p), 'encoder.onnx') },
    model_ids,
    preprocessing: {
      audio: {
        sample_rate: AUDIO.sampleRate,
        n_mels: AUDIO.nMels,
        n_fft: AUDIO.nFft,
        win_length: AUDIO.winLength,
        hop_length: AUDIO.hopLength,
        window: 'hann',
        fmin: 0,
        fmax: AUDIO.sampleRate / 2,
        max_seconds: AUDIO.maxSeconds,
      },
    },
    config: { embed_dim: AUDIO.dim, heads: AUDIO.heads, depth: AUDIO.depth, conv_stride: 2 },
  };
  return { folder: 'tiny-audio', seed: AUDIO.seed, files, manifest };
}
