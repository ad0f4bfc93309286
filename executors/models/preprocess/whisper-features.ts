/**
 * Whisper's log-mel input features, as transformers' WhisperFeatureExtractor computes them: the waveform padded
 * (or cut) to chunk_length seconds, STFT with a periodic Hann window of n_fft, centred frames (reflect padding of
 * n_fft/2), hop_length; the last frame dropped (frames = n_samples / hop = 3000 for 30 s); power spectrum; the Slaney
 * mel filterbank of mel.ts (0 Hz .. sampling_rate/2); then mel.ts's log10 / max − 8 / (x + 4) / 4. n_fft 400 is not
 * a power of two: fft.ts takes it mixed-radix (a 200-point complex FFT, 4·2·5·5, of the real frame split into its even
 * and odd samples), not the direct 400-point DFT (1–4 s a clip). Each frame is read where it lies in the padded clip
 * and windowed in the FFT's first pass; the spectra are kept bin-major, so the mel product runs over whole rows; the
 * logs are taken once the clip's largest energy is known, and not for energies the clamp decides.
 */
import type { AudioPreprocessing } from '../manifest.js';
import { windowedPowerSpectrum } from './fft.js';
import { type MelFeatures, hann, melEnergies, melFilterbank, nonZeroRanges, normaliseMelEnergies } from './mel.js';

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
  const half = nFft / 2;
  // The clip reflect-padded by n_fft/2 on both sides once (float32, as the samples are), so each frame is a slice of it.
  const x = new Float32Array(nSamples + nFft);
  x.set(samples.subarray(0, nSamples), half);
  for (let i = 0; i < half; i++) (x[i] = x[half + reflect(i - half, nSamples)]!, (x[half + nSamples + i] = x[half + reflect(nSamples + i, nSamples)]!));
  const frames = Math.floor(nSamples / hop); // 1 + n/hop centred frames, the last one dropped
  const bins = nFft / 2 + 1;
  const spectrum = windowedPowerSpectrum(hann(nFft));
  const fb = melFilterbank(pre);
  const ranges = nonZeroRanges(fb, nMels, bins);
  const power = new Float32Array(bins * frames); // [bins, frames]: each frame's spectrum is one column
  for (let f = 0; f < frames; f++) spectrum(x, f * hop, power, f, frames);
  const out = new Float32Array(nMels * frames);
  const max = melEnergies(power, frames, fb, ranges, out);
  normaliseMelEnergies(out, max);
  return { data: out, nMels, frames };
}
