/**
 * Log-mel spectrogram (Whisper-style): Hann window of win_length (periodic) centred on each hop, zero-padded
 * to n_fft, power spectrum, Slaney mel filterbank (slaney-normalised, as librosa's default), log10 with a
 * 1e-10 floor, dynamic range clamped to 8 (log10 units) below the maximum, then (x + 4) / 4.
 * frames = 1 + floor(samples / hop_length). Output layout [n_mels, frames] (mel-major).
 */
import type { AudioPreprocessing } from '../manifest.js';
import { powerSpectrum } from './fft.js';

export const LOG_FLOOR = 1e-10;
/** The value a silent input maps to after normalisation: (log10(1e-10) + 4) / 4. */
export const NORMALISED_FLOOR = (Math.log10(LOG_FLOOR) + 4) / 4;

export interface MelFeatures { data: Float32Array; nMels: number; frames: number }

const hzToMel = (f: number) => {
  const fSp = 200 / 3;
  const minLogHz = 1000;
  const minLogMel = minLogHz / fSp;
  const logStep = Math.log(6.4) / 27;
  return f >= minLogHz ? minLogMel + Math.log(f / minLogHz) / logStep : f / fSp;
};
const melToHz = (m: number) => {
  const fSp = 200 / 3;
  const minLogHz = 1000;
  const minLogMel = minLogHz / fSp;
  const logStep = Math.log(6.4) / 27;
  return m >= minLogMel ? minLogHz * Math.exp(logStep * (m - minLogMel)) : fSp * m;
};

/** Centre frequency (Hz) of each mel filter. */
export function melCenters(pre: AudioPreprocessing): number[] {
  const fmax = pre.fmax ?? pre.sample_rate / 2;
  const lo = hzToMel(pre.fmin);
  const hi = hzToMel(fmax);
  return Array.from({ length: pre.n_mels }, (_, i) => melToHz(lo + ((hi - lo) * (i + 1)) / (pre.n_mels + 1)));
}

const banks = new Map<string, Float64Array>();

/** [n_mels, n_fft/2+1] triangular filters, Slaney area normalisation. */
export function melFilterbank(pre: AudioPreprocessing): Float64Array {
  const key = JSON.stringify([pre.sample_rate, pre.n_fft, pre.n_mels, pre.fmin, pre.fmax]);
  const hit = banks.get(key);
  if (hit) return hit;
  const bins = pre.n_fft / 2 + 1;
  const fmax = pre.fmax ?? pre.sample_rate / 2;
  const lo = hzToMel(pre.fmin);
  const hi = hzToMel(fmax);
  const pts = Array.from({ length: pre.n_mels + 2 }, (_, i) => melToHz(lo + ((hi - lo) * i) / (pre.n_mels + 1)));
  const fb = new Float64Array(pre.n_mels * bins);
  for (let m = 0; m < pre.n_mels; m++) {
    const [l, c, r] = [pts[m]!, pts[m + 1]!, pts[m + 2]!];
    const norm = 2 / (r - l);
    for (let k = 0; k < bins; k++) {
      const f = (k * pre.sample_rate) / pre.n_fft;
      const w = Math.max(0, Math.min((f - l) / (c - l), (r - f) / (r - c)));
      fb[m * bins + k] = w * norm;
    }
  }
  banks.set(key, fb);
  return fb;
}

/**
 * Column `f` of out [n_mels, frames]: log10 of each filter's energy in `power` (floored at LOG_FLOOR); returns the
 * column's maximum. `ranges` from nonZeroRanges.
 */
export function logMelColumn(power: Float64Array, fb: Float64Array, ranges: Uint32Array, out: Float32Array, f: number, frames: number): number {
  const nMels = ranges.length / 2;
  const bins = power.length;
  let max = -Infinity;
  for (let m = 0; m < nMels; m++) {
    let e = 0;
    const row = m * bins;
    for (let k = ranges[2 * m]!; k < ranges[2 * m + 1]!; k++) e += fb[row + k]! * power[k]!;
    const v = Math.log10(Math.max(e, LOG_FLOOR));
    out[m * frames + f] = v;
    if (v > max) max = v;
  }
  return max;
}

/**
 * The mel energies of a whole spectrogram: out [n_mels, frames] from `power` [bins, frames] (bin-major, so each
 * filter weight scales one contiguous row), one filter at a time over its non-zero bins (`ranges` from
 * nonZeroRanges); normaliseMelEnergies then takes the logs. Returns the largest energy.
 */
export function melEnergies(power: Float32Array, frames: number, fb: Float64Array, ranges: Uint32Array, out: Float32Array): number {
  const nMels = ranges.length / 2;
  const bins = fb.length / nMels;
  const acc = new Float64Array(frames);
  let max = 0;
  for (let m = 0; m < nMels; m++) {
    acc.fill(0);
    const end = ranges[2 * m + 1]!;
    let k = ranges[2 * m]!;
    for (; k + 1 < end; k += 2) { // two bins per pass: half the accumulator's loads and stores
      const w0 = fb[m * bins + k]!, w1 = fb[m * bins + k + 1]!;
      for (let f = 0, i = k * frames, j = i + frames; f < frames; f++, i++, j++) acc[f]! += w0 * power[i]! + w1 * power[j]!;
    }
    if (k < end) {
      const w = fb[m * bins + k]!;
      for (let f = 0, i = k * frames; f < frames; f++, i++) acc[f]! += w * power[i]!;
    }
    for (let f = 0, o = m * frames; f < frames; f++, o++) {
      const e = acc[f]!;
      out[o] = e;
      if (e > max) max = e;
    }
  }
  return max;
}

/**
 * The mel energies of melEnergies (largest `maxEnergy`) → Whisper's normalised log-mel in place, the same values
 * as logMelColumn then normaliseLogMel: log10 floored at LOG_FLOOR, clamped to 8 below the largest, then (x + 4) / 4.
 * An energy at or below the clamp's threshold takes the clamp's value without a logarithm.
 */
export function normaliseMelEnergies(out: Float32Array, maxEnergy: number): void {
  const lowest = Math.log10(Math.max(maxEnergy, LOG_FLOOR)) - 8;
  const threshold = Math.max(10 ** lowest, LOG_FLOOR); // e ≤ threshold ⇔ max(log10(max(e, floor)), lowest) is the clamp
  const clamped = (Math.max(lowest, Math.log10(LOG_FLOOR)) + 4) / 4;
  for (let i = 0; i < out.length; i++) {
    const e = out[i]!;
    out[i] = e <= threshold ? clamped : (Math.log10(e) + 4) / 4;
  }
}

/** [start, end) of the non-zero bins of each filter, so the mel product skips the zeros. */
export function nonZeroRanges(fb: Float64Array, nMels: number, bins: number): Uint32Array {
  const r = new Uint32Array(2 * nMels);
  for (let m = 0; m < nMels; m++) {
    let a = 0;
    while (a < bins && fb[m * bins + a] === 0) a++;
    let b = bins;
    while (b > a && fb[m * bins + b - 1] === 0) b--;
    r[2 * m] = a;
    r[2 * m + 1] = b;
  }
  return r;
}

/** The periodic Hann window of n points (numpy / torch periodic=True), as Whisper and the mel spectrogram use it. */
export function hann(n: number): Float64Array {
  return Float64Array.from({ length: n }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / n));
}

export function logMel(samples: Float32Array, pre: AudioPreprocessing): MelFeatures {
  const { n_fft: nFft, win_length: win, hop_length: hop, n_mels: nMels } = pre;
  const bins = nFft / 2 + 1;
  const frames = 1 + Math.floor(samples.length / hop);
  const window = hann(win);
  const fb = melFilterbank(pre);
  const ranges = nonZeroRanges(fb, nMels, bins);
  const out = new Float32Array(nMels * frames);
  const frame = new Float64Array(nFft);
  const power = new Float64Array(bins);
  const im = new Float64Array(nFft);
  const padLeft = Math.floor((nFft - win) / 2);
  let max = -Infinity;
  for (let f = 0; f < frames; f++) {
    frame.fill(0);
    const start = f * hop - Math.floor(win / 2);
    for (let i = 0; i < win; i++) {
      const s = start + i;
      if (s >= 0 && s < samples.length) frame[padLeft + i] = samples[s]! * window[i]!;
    }
    powerSpectrum(frame, power, im);
    max = Math.max(max, logMelColumn(power, fb, ranges, out, f, frames));
  }
  normaliseLogMel(out, max);
  return { data: out, nMels, frames };
}

/** Whisper's normalisation of log10 mel energies in place: clamp to `max` − 8, then (x + 4) / 4. */
export function normaliseLogMel(out: Float32Array, max: number): void {
  const lowest = max - 8;
  for (let i = 0; i < out.length; i++) out[i] = (Math.max(out[i]!, lowest) + 4) / 4;
}
