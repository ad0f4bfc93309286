import test from 'ava';
import { tone } from '../../../../helpers/media.js';
import { decodeWav, encodeWav, toMono } from '../../../../../executors/models/preprocess/wav.js';
import { resample } from '../../../../../executors/models/preprocess/resample.js';
import {
  NORMALISED_FLOOR, hann, logMel, logMelColumn, melCenters, melEnergies, melFilterbank, nonZeroRanges, normaliseLogMel, normaliseMelEnergies,
} from '../../../../../executors/models/preprocess/mel.js';
import { fft, powerSpectrum, windowedPowerSpectrum } from '../../../../../executors/models/preprocess/fft.js';
import { preprocessAudio } from '../../../../../executors/models/preprocess/audio.js';
import { ModelErrorCode } from '../../../../../executors/models/errors.js';
import type { AudioPreprocessing } from '../../../../../executors/models/manifest.js';

const PRE: AudioPreprocessing = {
  sample_rate: 16000, n_mels: 80, n_fft: 512, win_length: 400, hop_length: 160, window: 'hann', fmin: 0, fmax: 8000, max_seconds: 30,
};

test('16-bit PCM WAV decodes to the samples it was written from', (t) => {
  const x = tone(440, 0.1, 16000);
  const pcm = decodeWav(encodeWav([x], 16000, 'pcm16'));
  t.is(pcm.sampleRate, 16000);
  t.is(pcm.channels[0]!.length, x.length);
  t.true(pcm.channels[0]!.every((v, i) => Math.abs(v - x[i]!) < 1 / 16000));
});

test('32-bit float WAV decodes exactly', (t) => {
  const x = tone(440, 0.05, 22050, 0.9);
  const pcm = decodeWav(encodeWav([x], 22050, 'float32'));
  t.is(pcm.sampleRate, 22050);
  t.deepEqual(pcm.channels[0], x);
});

test('stereo WAV is averaged to mono', (t) => {
  const l = Float32Array.from([0.5, 0.5, 0.5]);
  const r = Float32Array.from([-0.5, 0, 0.25]);
  const mono = toMono(decodeWav(encodeWav([l, r], 8000, 'float32')));
  t.deepEqual(Array.from(mono), [0, 0.25, 0.375]);
});

test('a truncated WAV is rejected with MODEL_INPUT_CORRUPT', (t) => {
  const wav = encodeWav([tone(440, 0.1, 16000)], 16000);
  const e = t.throws(() => decodeWav(wav.subarray(0, wav.length - 101)), { message: /truncated/ });
  t.is((e as { code?: string }).code, ModelErrorCode.INPUT_CORRUPT);
});

test('bytes that are not a WAV are rejected with MODEL_INPUT_CORRUPT', (t) => {
  const e = t.throws(() => decodeWav(Buffer.from('RIFF....junkjunkjunk')));
  t.is((e as { code?: string }).code, ModelErrorCode.INPUT_CORRUPT);
});

test('resampling 44.1 kHz to 16 kHz gives round(n * 16000 / 44100) samples', (t) => {
  const x = tone(1000, 1.2345, 44100);
  t.is(resample(x, 44100, 16000).length, Math.round((x.length * 16000) / 44100));
});

test('resampling keeps a 1 kHz tone at 1 kHz', (t) => {
  const y = resample(tone(1000, 0.5, 44100), 44100, 16000);
  // count zero crossings in the middle (skip edges): 2 per period
  const mid = y.subarray(1600, 6400); // 0.3 s
  let zc = 0;
  for (let i = 1; i < mid.length; i++) if ((mid[i - 1]! < 0) !== (mid[i]! < 0)) zc++;
  t.true(Math.abs(zc - 600) <= 2);
});

test('FFT matches a naive DFT', (t) => {
  const n = 64;
  const x = Float64Array.from({ length: n }, (_, i) => Math.sin(i * 0.7) + (i % 5) * 0.1);
  const re = x.slice();
  const im = new Float64Array(n);
  fft(re, im);
  for (let k = 0; k < n; k++) {
    let sr = 0;
    let si = 0;
    for (let j = 0; j < n; j++) {
      sr += x[j]! * Math.cos((-2 * Math.PI * k * j) / n);
      si += x[j]! * Math.sin((-2 * Math.PI * k * j) / n);
    }
    t.true(Math.abs(sr - re[k]!) < 1e-9 && Math.abs(si - im[k]!) < 1e-9);
  }
});

test('FFT of a size that is not a power of two (400 = 4·4·5·5, 90, 12, the prime 7) matches a naive DFT of complex input', (t) => {
  for (const n of [400, 90, 12, 7]) {
    const xr = Float64Array.from({ length: n }, (_, i) => Math.sin(i * 0.7) + (i % 5) * 0.1);
    const xi = Float64Array.from({ length: n }, (_, i) => Math.cos(i * 1.3) - (i % 3) * 0.2);
    const re = xr.slice();
    const im = xi.slice();
    fft(re, im);
    let worst = 0;
    for (let k = 0; k < n; k++) {
      let sr = 0;
      let si = 0;
      for (let j = 0; j < n; j++) {
        const a = (-2 * Math.PI * ((k * j) % n)) / n;
        sr += xr[j]! * Math.cos(a) - xi[j]! * Math.sin(a);
        si += xr[j]! * Math.sin(a) + xi[j]! * Math.cos(a);
      }
      worst = Math.max(worst, Math.abs(sr - re[k]!), Math.abs(si - im[k]!));
    }
    t.true(worst < 1e-9, `n = ${n}: max error ${worst}`);
  }
});

test('the power spectrum of a real frame (n_fft 400 and 512) equals |DFT|² of bins 0..n/2', (t) => {
  for (const n of [400, 512]) {
    const x = Float64Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 7) * 0.05));
    const power = powerSpectrum(x.slice());
    t.is(power.length, n / 2 + 1);
    let worst = 0;
    for (let k = 0; k <= n / 2; k++) {
      let sr = 0;
      let si = 0;
      for (let j = 0; j < n; j++) {
        const a = (-2 * Math.PI * ((k * j) % n)) / n;
        sr += x[j]! * Math.cos(a);
        si += x[j]! * Math.sin(a);
      }
      worst = Math.max(worst, Math.abs(sr * sr + si * si - power[k]!) / Math.max(1, sr * sr + si * si));
    }
    t.true(worst < 1e-9, `n = ${n}: max relative error ${worst}`);
  }
});

test('the windowed power spectrum of a frame read in place (n 400, 512, 48, 16 and 10) equals powerSpectrum of the windowed copy, written as a column', (t) => {
  for (const n of [400, 512, 48, 16, 10]) { // first passes: radix 8 (400, 48, 16: one stage only), radix 4 (512), a generic one (10)
    const signal = Float32Array.from({ length: 3 * n }, (_, i) => Math.sin(i * 0.37) * (1 + (i % 7) * 0.05));
    const window = hann(n);
    const spectrum = windowedPowerSpectrum(window);
    const columns = 3;
    const out = new Float32Array((n / 2 + 1) * columns);
    let worst = 0;
    for (const [col, start] of [[0, 0], [2, n + 3]] as const) {
      spectrum(signal, start, out, col, columns);
      const want = powerSpectrum(Float64Array.from({ length: n }, (_, i) => signal[start + i]! * window[i]!));
      for (let k = 0; k <= n / 2; k++) worst = Math.max(worst, Math.abs(out[k * columns + col]! - want[k]!) / Math.max(1, want[k]!));
    }
    t.true(worst < 1e-6, `n = ${n}: max relative error ${worst}`);
    t.true(Array.from({ length: n / 2 + 1 }, (_, k) => out[k * columns + 1]).every((v) => v === 0), 'the other columns are left alone');
  }
});

test('mel energies normalised at the end equal log-mel columns normalised (a tone, a quiet tail, silence)', (t) => {
  const pre = { ...PRE, n_fft: 400, win_length: 400 };
  const fb = melFilterbank(pre);
  const bins = pre.n_fft / 2 + 1;
  const ranges = nonZeroRanges(fb, pre.n_mels, bins);
  const frames = 6;
  for (const scale of [1, 1e-7, 0]) {
    // [bins, frames]: a loud bin 10 in the first frames, a spectrum falling over 12 decades in the last ones.
    const power = Float32Array.from({ length: bins * frames }, (_, i) => scale * (Math.floor(i / frames) === 10 ? 100 : 10 ** (-12 * ((i % frames) / frames) - (i % 5))));
    const energies = new Float32Array(pre.n_mels * frames);
    normaliseMelEnergies(energies, melEnergies(power, frames, fb, ranges, energies));
    const want = new Float32Array(pre.n_mels * frames);
    let max = -Infinity;
    for (let f = 0; f < frames; f++) {
      const column = Float64Array.from({ length: bins }, (_, k) => power[k * frames + f]!);
      max = Math.max(max, logMelColumn(column, fb, ranges, want, f, frames));
    }
    normaliseLogMel(want, max);
    const worst = want.reduce((w, v, i) => Math.max(w, Math.abs(v - energies[i]!)), 0);
    t.true(worst < 1e-6, `scale ${scale}: max |Δ| ${worst}`);
  }
});

test('log-mel has n_mels rows and 1 + floor(samples / hop) frames', (t) => {
  const mel = logMel(tone(300, 1, 16000), PRE);
  t.is(mel.nMels, 80);
  t.is(mel.frames, 101);
  t.is(mel.data.length, 80 * 101);
});

test('a 1 kHz sine puts its energy in the mel band centred nearest 1 kHz', (t) => {
  const mel = logMel(tone(1000, 1, 16000), PRE);
  const f = 50; // a frame in the middle
  let best = 0;
  for (let m = 1; m < mel.nMels; m++) if (mel.data[m * mel.frames + f]! > mel.data[best * mel.frames + f]!) best = m;
  const centers = melCenters(PRE);
  const nearest = centers.reduce((bi, c, i) => (Math.abs(c - 1000) < Math.abs(centers[bi]! - 1000) ? i : bi), 0);
  t.true(Math.abs(best - nearest) <= 1, `peak band ${best} (${centers[best]!.toFixed(0)} Hz), expected ~${nearest}`);
});

test('silence maps every bin to the normalised floor', (t) => {
  const mel = logMel(new Float32Array(16000), PRE);
  t.true(mel.data.every((v) => Math.abs(v - NORMALISED_FLOOR) < 1e-6));
});

test('audio longer than max_seconds is rejected with MODEL_INPUT_TOO_LARGE', (t) => {
  const wav = encodeWav([new Float32Array(16000 * 31)], 16000);
  const e = t.throws(() => preprocessAudio(wav, PRE));
  t.is((e as { code?: string }).code, ModelErrorCode.INPUT_TOO_LARGE);
});

test('a 44.1 kHz stereo WAV becomes log-mel at 16 kHz', (t) => {
  const x = tone(500, 1, 44100);
  const mel = preprocessAudio(encodeWav([x, x], 44100), PRE);
  t.is(mel.frames, 1 + Math.floor(16000 / 160));
});
