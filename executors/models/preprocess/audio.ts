/** Audio preprocessing: WAV bytes → PCM → mono → resample to the model rate → log-mel [n_mels, frames]. */
import { modelErrors } from '../errors.js';
import type { AudioPreprocessing } from '../manifest.js';
import { type MelFeatures, logMel } from './mel.js';
import { resample } from './resample.js';
import { whisperFeatures } from './whisper-features.js';
import { decodeWav, toMono } from './wav.js';

/** Mono samples at the model's sample rate, with the duration limit applied. */
export function wavToSamples(bytes: Uint8Array, pre: AudioPreprocessing): Float32Array {
  const pcm = decodeWav(bytes);
  const seconds = pcm.channels[0]!.length / pcm.sampleRate;
  if (seconds > pre.max_seconds) throw modelErrors.tooLarge(`audio is ${seconds.toFixed(1)} s long; the limit is ${pre.max_seconds} s`);
  if (pcm.channels[0]!.length === 0) throw modelErrors.invalid('audio has no samples');
  return resample(toMono(pcm), pcm.sampleRate, pre.sample_rate);
}

export function preprocessAudio(bytes: Uint8Array, pre: AudioPreprocessing): MelFeatures {
  const samples = wavToSamples(bytes, pre);
  return pre.whisper ? whisperFeatures(samples, pre, pre.whisper.chunk_length) : logMel(samples, pre);
}
