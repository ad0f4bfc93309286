/**
 * FFT of any size (in place) and the power spectrum of a real frame; plans cached per size. Every size takes the same
 * iterative Stockham autosort path (decimation in frequency over the size's factors, 4 first, then 2, 3, 5, ..., each
 * stage reading one buffer and writing the other in natural order, so there is neither recursion nor a digit-reversal
 * pass): O(n·Σ factors) instead of the direct DFT's O(n²). Radices 2, 4 and 5 have their butterflies written out (KISS
 * FFT's 5-point one), any other factor a generic p-point DFT, so a prime size degenerates to that DFT, still correct.
 * The frames of a spectrogram (windowedPowerSpectrum) are windowed inside the first pass, a radix-8 one where the size
 * starts 4·2. No npm FFT fits: fft.js (the well-kept one) takes powers of two only.
 */

/** One stage: radix r over sub-sequences of length n = r·m read with stride s; tw holds W_N^{p·k·s} for p < m, 0 < k < r. */
interface Stage { r: number; m: number; s: number; twRe: Float64Array; twIm: Float64Array }

interface Plan {
  stages: Stage[];
  /** The other buffer of the ping-pong. */
  re: Float64Array;
  im: Float64Array;
  /** One butterfly's r inputs and outputs (the generic stages). */
  aRe: Float64Array;
  aIm: Float64Array;
  bRe: Float64Array;
  bIm: Float64Array;
  /** W_r^j of the generic stages, indexed by r: cos and −sin of 2πj/r. */
  roots: Map<number, { cos: Float64Array; sin: Float64Array }>;
}

const plans = new Map<number, Plan>();

function factorise(n: number): number[] {
  const out: number[] = [];
  for (const p of [4, 2]) while (n % p === 0) (out.push(p), (n /= p));
  for (let p = 3; n > 1; p += 2) {
    if (p * p > n) p = n;
    while (n % p === 0) (out.push(p), (n /= p));
  }
  return out;
}

function plan(size: number): Plan {
  let pl = plans.get(size);
  if (!pl) plans.set(size, (pl = planOf(size, factorise(size))));
  return pl;
}

/** The stages (and scratch) of a transform of `size` through the radices `factors` (their product is `size`), in order. */
function planOf(size: number, factors: readonly number[]): Plan {
  const stages: Stage[] = [];
  const roots = new Map<number, { cos: Float64Array; sin: Float64Array }>();
  let n = size;
  let s = 1;
  for (const r of factors) {
    const m = n / r;
    const twRe = new Float64Array(m * (r - 1));
    const twIm = new Float64Array(m * (r - 1));
    for (let p = 0; p < m; p++) {
      for (let k = 1; k < r; k++) {
        const a = (-2 * Math.PI * ((p * k * s) % size)) / size;
        twRe[p * (r - 1) + k - 1] = Math.cos(a);
        twIm[p * (r - 1) + k - 1] = Math.sin(a);
      }
    }
    stages.push({ r, m, s, twRe, twIm });
    if (r !== 2 && r !== 4 && r !== 5 && r !== 8 && !roots.has(r)) {
      roots.set(r, { cos: Float64Array.from({ length: r }, (_, j) => Math.cos((2 * Math.PI * j) / r)), sin: Float64Array.from({ length: r }, (_, j) => -Math.sin((2 * Math.PI * j) / r)) });
    }
    n = m;
    s *= r;
  }
  const maxR = Math.max(1, ...factors);
  return {
    stages, roots, re: new Float64Array(size), im: new Float64Array(size),
    aRe: new Float64Array(maxR), aIm: new Float64Array(maxR), bRe: new Float64Array(maxR), bIm: new Float64Array(maxR),
  };
}

/** In-place forward DFT of (re, im), X[k] = Σ x[n] e^{-2πikn/N}, for any length. */
export function fft(re: Float64Array, im: Float64Array): void {
  const size = re.length;
  if (size < 2) return;
  const pl = plan(size);
  if (runStages(pl, 0, re, im, pl.re, pl.im) !== re) (re.set(pl.re), im.set(pl.im));
}

/**
 * The plan's stages from `from` on, reading (xr, xi) first and ping-ponging with (yr, yi); returns the real part
 * of the pair that holds the result (xr or yr; its imaginary part is the matching xi or yi).
 */
function runStages(pl: Plan, from: number, xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array): Float64Array {
  const stages = pl.stages;
  for (let k = from; k < stages.length; k++) {
    const st = stages[k]!;
    if (st.r === 4) radix4(st, xr, xi, yr, yi);
    else if (st.r === 2) radix2(st, xr, xi, yr, yi);
    else if (st.r === 5) radix5(st, xr, xi, yr, yi);
    else radixAny(st, pl, xr, xi, yr, yi);
    const tr = xr, ti = xi;
    (xr = yr), (xi = yi), (yr = tr), (yi = ti);
  }
  return xr;
}

/**
 * y[q + s·(r·p + k)] = W_N^{p·k·s} · Σ_j x[q + s·(p + j·m)] · W_r^{j·k}: the r-point DFT of each decimated group,
 * twiddled, written where the next stage (m, s·r) reads it.
 */
function radix4({ m, s, twRe, twIm }: Stage, xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array): void {
  const sm = s * m;
  for (let p = 0; p < m; p++) {
    const w1r = twRe[3 * p]!, w1i = twIm[3 * p]!, w2r = twRe[3 * p + 1]!, w2i = twIm[3 * p + 1]!, w3r = twRe[3 * p + 2]!, w3i = twIm[3 * p + 2]!;
    for (let q = 0, i = s * p, o = 4 * s * p; q < s; q++, i++, o++) {
      const a0r = xr[i]!, a0i = xi[i]!, a1r = xr[i + sm]!, a1i = xi[i + sm]!;
      const a2r = xr[i + 2 * sm]!, a2i = xi[i + 2 * sm]!, a3r = xr[i + 3 * sm]!, a3i = xi[i + 3 * sm]!;
      const pr = a0r + a2r, pi = a0i + a2i, mr = a0r - a2r, mi = a0i - a2i;
      const qr = a1r + a3r, qi = a1i + a3i, nr = a1r - a3r, ni = a1i - a3i;
      yr[o] = pr + qr; yi[o] = pi + qi;
      const b1r = mr + ni, b1i = mi - nr; // (a0 − a2) − i·(a1 − a3)
      const b2r = pr - qr, b2i = pi - qi;
      const b3r = mr - ni, b3i = mi + nr; // (a0 − a2) + i·(a1 − a3)
      yr[o + s] = b1r * w1r - b1i * w1i; yi[o + s] = b1r * w1i + b1i * w1r;
      yr[o + 2 * s] = b2r * w2r - b2i * w2i; yi[o + 2 * s] = b2r * w2i + b2i * w2r;
      yr[o + 3 * s] = b3r * w3r - b3i * w3i; yi[o + 3 * s] = b3r * w3i + b3i * w3r;
    }
  }
}

function radix2({ m, s, twRe, twIm }: Stage, xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array): void {
  const sm = s * m;
  for (let p = 0; p < m; p++) {
    const wr = twRe[p]!, wi = twIm[p]!;
    for (let q = 0, i = s * p, o = 2 * s * p; q < s; q++, i++, o++) {
      const ar = xr[i]!, ai = xi[i]!, br = xr[i + sm]!, bi = xi[i + sm]!;
      yr[o] = ar + br; yi[o] = ai + bi;
      const dr = ar - br, di = ai - bi;
      yr[o + s] = dr * wr - di * wi; yi[o + s] = dr * wi + di * wr;
    }
  }
}

/** Any radix but 2, 4 and 5: a direct r-point DFT through the plan's scratch. */
function radixAny(st: Stage, pl: Plan, xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array): void {
  const { r, m, s, twRe, twIm } = st;
  const { aRe, aIm, bRe, bIm } = pl;
  const root = pl.roots.get(r);
  const sm = s * m;
  for (let p = 0; p < m; p++) {
    for (let q = 0, i = s * p, o = r * s * p; q < s; q++, i++, o++) {
      for (let j = 0; j < r; j++) (aRe[j] = xr[i + j * sm]!, (aIm[j] = xi[i + j * sm]!));
      dftSmall(r, root!.cos, root!.sin, aRe, aIm, bRe, bIm);
      yr[o] = bRe[0]!; yi[o] = bIm[0]!;
      for (let k = 1; k < r; k++) {
        const wr = twRe[p * (r - 1) + k - 1]!, wi = twIm[p * (r - 1) + k - 1]!;
        yr[o + k * s] = bRe[k]! * wr - bIm[k]! * wi;
        yi[o + k * s] = bRe[k]! * wi + bIm[k]! * wr;
      }
    }
  }
}

function dftSmall(r: number, cos: Float64Array, sin: Float64Array, aRe: Float64Array, aIm: Float64Array, bRe: Float64Array, bIm: Float64Array): void {
  for (let k = 0; k < r; k++) {
    let sr = 0, si = 0;
    for (let j = 0; j < r; j++) {
      const w = (j * k) % r;
      sr += aRe[j]! * cos[w]! - aIm[j]! * sin[w]!;
      si += aRe[j]! * sin[w]! + aIm[j]! * cos[w]!;
    }
    bRe[k] = sr;
    bIm[k] = si;
  }
}

const halfTwiddles = new Map<number, { cos: Float64Array; sin: Float64Array }>();

/** W_n^k = e^{-2πik/n} for k < n/2. */
function halfTwiddle(n: number) {
  let t = halfTwiddles.get(n);
  if (!t) {
    t = { cos: new Float64Array(n / 2), sin: new Float64Array(n / 2) };
    for (let k = 0; k < n / 2; k++) (t.cos[k] = Math.cos((2 * Math.PI * k) / n), (t.sin[k] = -Math.sin((2 * Math.PI * k) / n)));
    halfTwiddles.set(n, t);
  }
  return t;
}

/**
 * |X[k]|² for k = 0..n/2 of a real frame of even length n (overwritten). Scratch arrays may be passed in. A real
 * input takes half the work: the even samples as real part and the odd ones as imaginary part make one n/2-point
 * complex FFT Z, then X[k] = E[k] + W_n^k·O[k] with E[k] = (Z[k] + conj Z[n/2−k]) / 2, O[k] = (Z[k] − conj Z[n/2−k]) / 2i.
 */
export function powerSpectrum(frame: Float64Array, out = new Float64Array(frame.length / 2 + 1), im = new Float64Array(frame.length)): Float64Array {
  if (frame.length % 2 !== 0) throw new Error(`powerSpectrum needs an even frame length, got ${frame.length}`);
  const h = frame.length / 2;
  for (let j = 0; j < h; j++) (frame[j] = frame[2 * j]!, (im[j] = frame[2 * j + 1]!)); // in order: reads at 2j ≥ j
  return packedPowerSpectrum(frame.subarray(0, h), im.subarray(0, h), out);
}

/**
 * powerSpectrum of a real frame already split into its even samples (zr) and odd samples (zi), n/2 each (both
 * overwritten), so a caller that windows the frame can split it in the same pass.
 */
export function packedPowerSpectrum(zr: Float64Array, zi: Float64Array, out = new Float64Array(zr.length + 1)): Float64Array {
  fft(zr, zi);
  return unpackPower(zr, zi, out);
}

/**
 * A frame's power spectrum |X[k]|², k = 0..n/2, for frames of a signal weighted by `window` (n = window.length, even):
 * the returned function takes the frame src[start .. start + n) where it lies in `src` and writes |X[k]|² to
 * out[at + k·stride] (a column of a bin-major spectrogram, or with the defaults a frame's own array). The window
 * product and the split into even and odd samples (packedPowerSpectrum's input) happen in the FFT's first pass, so the
 * frame is neither copied nor windowed in a pass of its own. Its scratch is its own: one function per caller.
 */
export function windowedPowerSpectrum(window: Float64Array): (src: Float32Array, start: number, out: Float32Array, at?: number, stride?: number) => void {
  if (window.length % 2 !== 0) throw new Error(`windowedPowerSpectrum needs an even window length, got ${window.length}`);
  const h = window.length / 2;
  const pl = windowedPlan(h);
  const we = Float64Array.from({ length: h }, (_, j) => window[2 * j]!);
  const wo = Float64Array.from({ length: h }, (_, j) => window[2 * j + 1]!);
  const ar = new Float64Array(h), ai = new Float64Array(h);
  const br = new Float64Array(h), bi = new Float64Array(h);
  const first = pl.stages[0];
  if (first?.r === 8) {
    return (src, start, out, at = 0, stride = 1) => {
      radix8Windowed(first, src, start, we, wo, ar, ai);
      if (runStages(pl, 1, ar, ai, br, bi) === ar) unpackPower(ar, ai, out, at, stride);
      else unpackPower(br, bi, out, at, stride);
    };
  }
  if (first?.r === 4) {
    return (src, start, out, at = 0, stride = 1) => {
      radix4Windowed(first, src, start, we, wo, ar, ai);
      if (runStages(pl, 1, ar, ai, br, bi) === ar) unpackPower(ar, ai, out, at, stride);
      else unpackPower(br, bi, out, at, stride);
    };
  }
  return (src, start, out, at = 0, stride = 1) => {
    for (let j = 0, i = start; j < h; j++, i += 2) (ar[j] = src[i]! * we[j]!, (ai[j] = src[i + 1]! * wo[j]!));
    if (runStages(pl, 0, ar, ai, br, bi) === ar) unpackPower(ar, ai, out, at, stride);
    else unpackPower(br, bi, out, at, stride);
  };
}

const windowedPlans = new Map<number, Plan>();

/**
 * The plan of windowedPowerSpectrum's n/2-point transform: the first two radices 4 and 2 (when the size has them) made
 * one radix-8 pass, so the windowed frame is read once and the transform has one pass fewer (200 = 8·5·5). Only
 * radix8Windowed runs a radix-8 stage, so it is never a later one.
 */
function windowedPlan(size: number): Plan {
  let pl = windowedPlans.get(size);
  if (!pl) {
    const f = factorise(size);
    windowedPlans.set(size, (pl = f[0] === 4 && f[1] === 2 ? planOf(size, [8, ...f.slice(2)]) : plan(size)));
  }
  return pl;
}

const C8 = Math.SQRT1_2;

/**
 * The first stage (s = 1) of a radix-8 plan, reading the windowed frame as radix4Windowed does. Each 8-point DFT is two
 * 4-point ones, E of the even inputs and O of the odd: X[k] = E[k] + W_8^k·O[k], X[k + 4] = E[k] − W_8^k·O[k].
 */
function radix8Windowed({ m, twRe, twIm }: Stage, src: Float32Array, start: number, we: Float64Array, wo: Float64Array, yr: Float64Array, yi: Float64Array): void {
  for (let p = 0, o = 0; p < m; p++, o += 8) {
    const j1 = p + m, j2 = j1 + m, j3 = j2 + m, j4 = j3 + m, j5 = j4 + m, j6 = j5 + m, j7 = j6 + m;
    const x0 = start + 2 * p, x1 = start + 2 * j1, x2 = start + 2 * j2, x3 = start + 2 * j3;
    const x4 = start + 2 * j4, x5 = start + 2 * j5, x6 = start + 2 * j6, x7 = start + 2 * j7;
    const a0r = src[x0]! * we[p]!, a0i = src[x0 + 1]! * wo[p]!, a1r = src[x1]! * we[j1]!, a1i = src[x1 + 1]! * wo[j1]!;
    const a2r = src[x2]! * we[j2]!, a2i = src[x2 + 1]! * wo[j2]!, a3r = src[x3]! * we[j3]!, a3i = src[x3 + 1]! * wo[j3]!;
    const a4r = src[x4]! * we[j4]!, a4i = src[x4 + 1]! * wo[j4]!, a5r = src[x5]! * we[j5]!, a5i = src[x5 + 1]! * wo[j5]!;
    const a6r = src[x6]! * we[j6]!, a6i = src[x6 + 1]! * wo[j6]!, a7r = src[x7]! * we[j7]!, a7i = src[x7 + 1]! * wo[j7]!;
    // E = DFT4(a0, a2, a4, a6), O = DFT4(a1, a3, a5, a7), as radix4's butterfly
    const sEr = a0r + a4r, sEi = a0i + a4i, dEr = a0r - a4r, dEi = a0i - a4i;
    const tEr = a2r + a6r, tEi = a2i + a6i, uEr = a2r - a6r, uEi = a2i - a6i;
    const e0r = sEr + tEr, e0i = sEi + tEi, e2r = sEr - tEr, e2i = sEi - tEi;
    const e1r = dEr + uEi, e1i = dEi - uEr, e3r = dEr - uEi, e3i = dEi + uEr;
    const sOr = a1r + a5r, sOi = a1i + a5i, dOr = a1r - a5r, dOi = a1i - a5i;
    const tOr = a3r + a7r, tOi = a3i + a7i, uOr = a3r - a7r, uOi = a3i - a7i;
    const o0r = sOr + tOr, o0i = sOi + tOi, o2r = sOr - tOr, o2i = sOi - tOi;
    const o1r = dOr + uOi, o1i = dOi - uOr, o3r = dOr - uOi, o3i = dOi + uOr;
    // W_8^k·O[k]: W_8 = (1 − i)/√2, W_8² = −i, W_8³ = (−1 − i)/√2
    const t1r = (o1r + o1i) * C8, t1i = (o1i - o1r) * C8;
    const t2r = o2i, t2i = -o2r;
    const t3r = (o3i - o3r) * C8, t3i = -(o3r + o3i) * C8;
    const t = 7 * p;
    yr[o] = e0r + o0r; yi[o] = e0i + o0i;
    twiddle(yr, yi, o + 1, e1r + t1r, e1i + t1i, twRe[t]!, twIm[t]!);
    twiddle(yr, yi, o + 2, e2r + t2r, e2i + t2i, twRe[t + 1]!, twIm[t + 1]!);
    twiddle(yr, yi, o + 3, e3r + t3r, e3i + t3i, twRe[t + 2]!, twIm[t + 2]!);
    twiddle(yr, yi, o + 4, e0r - o0r, e0i - o0i, twRe[t + 3]!, twIm[t + 3]!);
    twiddle(yr, yi, o + 5, e1r - t1r, e1i - t1i, twRe[t + 4]!, twIm[t + 4]!);
    twiddle(yr, yi, o + 6, e2r - t2r, e2i - t2i, twRe[t + 5]!, twIm[t + 5]!);
    twiddle(yr, yi, o + 7, e3r - t3r, e3i - t3i, twRe[t + 6]!, twIm[t + 6]!);
  }
}

/** y[o] = (br + i·bi)·(wr + i·wi). */
function twiddle(yr: Float64Array, yi: Float64Array, o: number, br: number, bi: number, wr: number, wi: number): void {
  yr[o] = br * wr - bi * wi;
  yi[o] = br * wi + bi * wr;
}

/**
 * The first stage (s = 1) of a radix-4 plan, its input the even (real part) and odd (imaginary part) samples of
 * src[start ..] times the window's even (we) and odd (wo) points: radix4's butterfly, reading the frame in place.
 */
function radix4Windowed({ m, twRe, twIm }: Stage, src: Float32Array, start: number, we: Float64Array, wo: Float64Array, yr: Float64Array, yi: Float64Array): void {
  for (let p = 0, o = 0; p < m; p++, o += 4) {
    const w1r = twRe[3 * p]!, w1i = twIm[3 * p]!, w2r = twRe[3 * p + 1]!, w2i = twIm[3 * p + 1]!, w3r = twRe[3 * p + 2]!, w3i = twIm[3 * p + 2]!;
    const j1 = p + m, j2 = p + 2 * m, j3 = p + 3 * m;
    const x0 = start + 2 * p, x1 = start + 2 * j1, x2 = start + 2 * j2, x3 = start + 2 * j3;
    const a0r = src[x0]! * we[p]!, a0i = src[x0 + 1]! * wo[p]!, a1r = src[x1]! * we[j1]!, a1i = src[x1 + 1]! * wo[j1]!;
    const a2r = src[x2]! * we[j2]!, a2i = src[x2 + 1]! * wo[j2]!, a3r = src[x3]! * we[j3]!, a3i = src[x3 + 1]! * wo[j3]!;
    const pr = a0r + a2r, pi = a0i + a2i, mr = a0r - a2r, mi = a0i - a2i;
    const qr = a1r + a3r, qi = a1i + a3i, nr = a1r - a3r, ni = a1i - a3i;
    yr[o] = pr + qr; yi[o] = pi + qi;
    const b1r = mr + ni, b1i = mi - nr;
    const b2r = pr - qr, b2i = pi - qi;
    const b3r = mr - ni, b3i = mi + nr;
    yr[o + 1] = b1r * w1r - b1i * w1i; yi[o + 1] = b1r * w1i + b1i * w1r;
    yr[o + 2] = b2r * w2r - b2i * w2i; yi[o + 2] = b2r * w2i + b2i * w2r;
    yr[o + 3] = b3r * w3r - b3i * w3i; yi[o + 3] = b3r * w3i + b3i * w3r;
  }
}

/**
 * |X[k]|², k = 0..h, of the real 2h-point frame whose even / odd samples' h-point transform is Z = (zr, zi). With
 * E = Z[k] + conj Z[h−k], O = (Z[k] − conj Z[h−k]) / i and T = W_2h^k · O: 2·X[k] = E + T and 2·X[h−k] = conj(E − T),
 * so each pair (k, h−k) takes one twiddle product.
 */
function unpackPower<T extends Float64Array | Float32Array>(zr: Float64Array, zi: Float64Array, out: T, at = 0, stride = 1): T {
  const h = zr.length;
  out[at] = (zr[0]! + zi[0]!) ** 2;
  out[at + h * stride] = (zr[0]! - zi[0]!) ** 2;
  const { cos, sin } = halfTwiddle(2 * h);
  for (let k = 1, j = h - 1; k <= j; k++, j--) {
    const ar = zr[k]!, ai = zi[k]!, br = zr[j]!, bi = -zi[j]!; // Z[k], conj Z[h−k]
    const er = ar + br, ei = ai + bi;
    const or = ai - bi, oi = br - ar; // (Z[k] − conj Z[h−k]) / i
    const wr = cos[k]!, wi = sin[k]!;
    const tr = or * wr - oi * wi, ti = or * wi + oi * wr;
    const pr = er + tr, pi = ei + ti, mr = er - tr, mi = ei - ti;
    out[at + k * stride] = 0.25 * (pr * pr + pi * pi);
    out[at + j * stride] = 0.25 * (mr * mr + mi * mi);
  }
  return out;
}

/** W_5 = e^{-2πi/5} and W_5²: the constants of the 5-point butterfly. */
const Y1R = Math.cos((2 * Math.PI) / 5), Y1I = -Math.sin((2 * Math.PI) / 5);
const Y2R = Math.cos((4 * Math.PI) / 5), Y2I = -Math.sin((4 * Math.PI) / 5);

/** Radix 5 with KISS FFT's kf_bfly5 butterfly: the conjugate-symmetric pairs (1, 4) and (2, 3) share their products. */
function radix5({ m, s, twRe, twIm }: Stage, xr: Float64Array, xi: Float64Array, yr: Float64Array, yi: Float64Array): void {
  const sm = s * m;
  for (let p = 0; p < m; p++) {
    const t = 4 * p;
    const w1r = twRe[t]!, w1i = twIm[t]!, w2r = twRe[t + 1]!, w2i = twIm[t + 1]!;
    const w3r = twRe[t + 2]!, w3i = twIm[t + 2]!, w4r = twRe[t + 3]!, w4i = twIm[t + 3]!;
    for (let q = 0, i = s * p, o = 5 * s * p; q < s; q++, i++, o++) {
      const r0 = xr[i]!, i0 = xi[i]!;
      const a1r = xr[i + sm]!, a1i = xi[i + sm]!, a2r = xr[i + 2 * sm]!, a2i = xi[i + 2 * sm]!;
      const a3r = xr[i + 3 * sm]!, a3i = xi[i + 3 * sm]!, a4r = xr[i + 4 * sm]!, a4i = xi[i + 4 * sm]!;
      const r7 = a1r + a4r, i7 = a1i + a4i, r10 = a1r - a4r, i10 = a1i - a4i;
      const r8 = a2r + a3r, i8 = a2i + a3i, r9 = a2r - a3r, i9 = a2i - a3i;
      yr[o] = r0 + r7 + r8; yi[o] = i0 + i7 + i8;
      const r5 = r0 + r7 * Y1R + r8 * Y2R, i5 = i0 + i7 * Y1R + i8 * Y2R;
      const r6 = i10 * Y1I + i9 * Y2I, i6 = -(r10 * Y1I + r9 * Y2I);
      const r11 = r0 + r7 * Y2R + r8 * Y1R, i11 = i0 + i7 * Y2R + i8 * Y1R;
      const r12 = -i10 * Y2I + i9 * Y1I, i12 = r10 * Y2I - r9 * Y1I;
      const b1r = r5 - r6, b1i = i5 - i6, b4r = r5 + r6, b4i = i5 + i6;
      const b2r = r11 + r12, b2i = i11 + i12, b3r = r11 - r12, b3i = i11 - i12;
      yr[o + s] = b1r * w1r - b1i * w1i; yi[o + s] = b1r * w1i + b1i * w1r;
      yr[o + 2 * s] = b2r * w2r - b2i * w2i; yi[o + 2 * s] = b2r * w2i + b2i * w2r;
      yr[o + 3 * s] = b3r * w3r - b3i * w3i; yi[o + 3 * s] = b3r * w3i + b3i * w3r;
      yr[o + 4 * s] = b4r * w4r - b4i * w4i; yi[o + 4 * s] = b4r * w4i + b4i * w4r;
    }
  }
}
