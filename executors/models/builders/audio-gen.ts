/**
 * tiny-audio-gen: a vocoder-like generator. embeddings [frames, hidden] → causal Conv1d (kernel 3, left-padded,
 * so each frame sees itself and 2 previous frames) → GELU → MLP → tanh → waveform [frames * 240] at 24 kHz.
 * Because the graph is causal with a 3-frame receptive field, chunks run with >= 2 frames of left context
 * concatenate to exactly the one-shot output.
 */
import { GraphBuilder } from '../onnx/graph-builder.js';
import { ParamStore, linear } from '../onnx/layers.js';
import type { ManifestInput } from '../manifest.js';
import { type BuiltModel, emitGraph } from './common.js';

export const AUDIO_GEN = {
  seed: 4004,
  modelId: 'cornserve/tiny-audio-gen',
  hidden: 256,
  width: 128,
  kernel: 3,
  sampleRate: 24000,
  samplesPerFrame: 240,
  defaultChunk: 50,
  defaultLeftContext: 4,
};

function buildVocoder(p: ParamStore): GraphBuilder {
  const { hidden, width, kernel, samplesPerFrame } = AUDIO_GEN;
  const g = new GraphBuilder('tiny-audio-gen-vocoder');
  const emb = g.input('embeddings', 'FLOAT', ['frames', hidden]);
  const x = g.unsqueeze(g.transpose(emb, [1, 0]), [0]); // [1, hidden, frames]
  const w = g.initializer('conv.weight', p.get('conv.weight', [width, hidden * kernel], 'matrix'), [width, hidden, kernel]);
  const b = g.initializer('conv.bias', p.get('conv.bias', [width], 'bias'), [width]);
  const c = g.gelu(g.conv(x, w, b, { pads: [kernel - 1, 0] })); // causal: all padding on the left
  const h = g.transpose(g.squeeze(c, [0]), [1, 0]); // [frames, width]
  const m = g.gelu(linear(g, p, h, 'fc1', width, width));
  const wave = g.tanh(linear(g, p, m, 'fc2', width, samplesPerFrame, { gain: 3 }));
  g.output(g.reshape(wave, [-1]), 'waveform', 'FLOAT', ['samples']);
  return g;
}

export function buildAudioGen(): BuiltModel {
  const p = new ParamStore(AUDIO_GEN.seed);
  const files = new Map<string, Uint8Array>();
  const manifest: ManifestInput = {
    schema_version: 1,
    name: 'tiny-audio-gen',
    family: 'audio-generator',
    modalities: ['audio'],
    dtype: 'float32',
    graphs: { vocoder: emitGraph(files, buildVocoder(p), 'vocoder.onnx') },
    model_ids: { [AUDIO_GEN.modelId]: { hidden_size: AUDIO_GEN.hidden, graphs: {} } },
    generation: {
      audio: {
        sample_rate: AUDIO_GEN.sampleRate,
        samples_per_frame: AUDIO_GEN.samplesPerFrame,
        receptive_field_frames: AUDIO_GEN.kernel,
        default_chunk_size: AUDIO_GEN.defaultChunk,
        default_left_context_size: AUDIO_GEN.defaultLeftContext,
      },
    },
    config: { input_hidden: AUDIO_GEN.hidden },
  };
  return { folder: 'tiny-audio-gen', seed: AUDIO_GEN.seed, files, manifest };
}
