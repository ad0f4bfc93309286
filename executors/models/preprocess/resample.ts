/**
 * Band-limited resampling (windowed sinc, Hann window, cutoff at the lower Nyquist). Output length is
 * round(n * to / from). For rational ratios with few phases the filter taps are precomputed per phase.
 */

const ZERO_CROSSINGS = 10;

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = Math.PI * x;
  return Math.sin(px) / px;
}

export function resample(x: Float32Array, from: number, to: number): Float32Array {
  if (from === to) return x;
  const outLen = Math.round((x.length * to) / from);
  const out = new Float32Array(outLen);
  const fc = Math.min(1, to / from); // cutoff relative to the input Nyquist
  const half = Math.ceil(ZERO_CROSSINGS / fc);
  const taps = 2 * half;
  const g = gcd(from, to);
  const phases = to / g; // output positions repeat their fractional offset every `phases` samples
  const step = from / to;
  const kernel = (d: number) => {
    const w = Math.abs(d) >= half ? 0 : 0.5 + 0.5 * Math.cos((Math.PI * d) / half);
    return fc * sinc(fc * d) * w;
  };
  const table = phases <= 4096 ? new Float32Array(phases * taps) : undefined;
  if (table) {
    for (let p = 0; p < phases; p++) {
      const frac = (p * from / g) % phases / phases; // fractional part of p * step
      for (let k = 0; k < taps; k++) table[p * taps + k] = kernel(frac - (k - half + 1));
    }
  }
  for (let j = 0; j < outLen; j++) {
    const t = j * step;
    const base = Math.floor(t);
    const row = table ? (j % phases) * taps : -1;
    let s = 0;
    const k0 = Math.max(0, half - 1 - base);
    const k1 = Math.min(taps, x.length - base + half - 1);
    if (table) for (let k = k0; k < k1; k++) s += x[base + k - half + 1]! * table[row + k]!;
    else for (let k = k0; k < k1; k++) s += x[base + k - half + 1]! * kernel(t - (base + k - half + 1));
    out[j] = s;
  }
  return out;
}
