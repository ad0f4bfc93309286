/**
 * Whisper's log-mel input features, as transformers' WhisperFeatureExtractor computes them: the waveform padded
 * (or cut) to chunk_length seconds, STFT with a periodic Hann window of n_fft, centred frames (reflect padding of
 * n_fft/2), hop_length; the last frame dropped (frames = n_samples / hop = 3000 for 30 s); power spectrum; the Slaney
 * mel filterbank of mel.ts (0 Hz .. sampling_rate/2); then mel.ts's log10 / max − 8 / (x + 4) / 4. n_fft 400 is not
 * a power of two: fft.ts takes it mixed-radix (a 200-point complex FFT, 4·2·5·5, of the packed real frame), not the
 * direct 400-point DFT it once was (1–4 s a clip).
 */
import type { AudioPreprocessing } from '../manifest.js';
import { powerSpectrum } from './fft.js';
import { type MelFeatures, hann, logMelColumn, melFilterbank, nonZeroRanges, normaliseLogMel } from './mel.js';

/** numpy's reflect padding index (no edge repeat). */
function reflect(i: number, n: number): number {
  if (n === 1) return 0;
  const period = 2 * (n - 1);
  i = ((i % period) + period) % period;
  return i < n ? i : period - i;
}

/** `samples` (mono, at sample_rate) → features [n_mels, n_samples / hop] with n_samples = chunk_seconds · rate. */
export function whisperFeatures(samples: Float32Array, pre: AudioPreprocessing, chunkSeconds: number): MelFeatures {
  const { n_fft: nFft, hop_length: hop, n_mels: nMels } = pre;
  const nSamples = chunkSeconds * pre.sample_rate;
  const x = new Float64Array(nSamples);
  x.set(samples.subarray(0, nSamples));
  const frames = Math.floor(nSamples / hop); // 1 + n/hop centred frames, the last one dropped
  const bins = nFft / 2 + 1;
  const window = hann(nFft);
  const fb = melFilterbank(pre);
  const ranges = nonZeroRanges(fb, nMels, bins);
  const frame = new Float64Array(nFft);
  const power = new Float64Array(bins);
  const im = new Float64Array(nFft);
  const out = new Float32Array(nMels * frames);
  const half = nFft / 2;
  let max = -Infinity;
  for (let f = 0; f < frames; f++) {
    const start = f * hop - half;
    for (let i = 0; i < nFft; i++) frame[i] = x[reflect(start + i, nSamples)]! * window[i]!;
    powerSpectrum(frame, power, im);
    max = Math.max(max, logMelColumn(power, fb, ranges, out, f, frames));
  }
  normaliseLogMel(out, max);
  return { data: out, nMels, frames };
}
