/**
 * Whisper's log-mel features computed from their definition with a direct 400-point DFT per frame (O(n²), the way
 * the features were once computed): the reference the FFT path is checked against, and its benchmark baseline.
 */
import type { AudioPreprocessing } from '../../executors/models/manifest.js';
import { hann, logMelColumn, melFilterbank, nonZeroRanges, normaliseLogMel, type MelFeatures } from '../../executors/models/preprocess/mel.js';

/** numpy's reflect index: no edge repeat. */
const reflect = (i: number, n: number) => (i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i);

export function directWhisperFeatures(samples: Float32Array, pre: AudioPreprocessing, chunkSeconds: number): MelFeatures {
  const { n_fft: n, hop_length: hop, n_mels: nMels } = pre;
  const nSamples = chunkSeconds * pre.sample_rate;
  const x = new Float64Array(nSamples);
  x.set(samples.subarray(0, nSamples));
  const frames = Math.floor(nSamples / hop);
  const bins = n / 2 + 1;
  const window = hann(n);
  const cos = Float64Array.from({ length: n }, (_, j) => Math.cos((2 * Math.PI * j) / n));
  const sin = Float64Array.from({ length: n }, (_, j) => Math.sin((2 * Math.PI * j) / n));
  const fb = melFilterbank(pre);
  const ranges = nonZeroRanges(fb, nMels, bins);
  const frame = new Float64Array(n);
  const power = new Float64Array(bins);
  const out = new Float32Array(nMels * frames);
  let max = -Infinity;
  for (let f = 0; f < frames; f++) {
    for (let i = 0; i < n; i++) frame[i] = x[reflect(f * hop - n / 2 + i, nSamples)]! * window[i]!;
    for (let k = 0; k < bins; k++) {
      let re = 0;
      let im = 0;
      for (let j = 0, w = 0; j < n; j++, w = (w + k) % n) (re += frame[j]! * cos[w]!, (im -= frame[j]! * sin[w]!));
      power[k] = re * re + im * im;
    }
    max = Math.max(max, logMelColumn(power, fb, ranges, out, f, frames));
  }
  normaliseLogMel(out, max);
  return { data: out, nMels, frames };
}
