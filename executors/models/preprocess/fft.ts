/**
 * FFT of any size (in place) and the power spectrum of a real frame; plans cached per size. A power of two takes
 * the iterative radix-2 path; any other size (Whisper's n_fft = 400, a 200 = 4·2·5·5-point FFT in powerSpectrum)
 * a mixed-radix recursion in the manner of KISS FFT (decimation in time over the size's factors, 4 first, then 2, 3,
 * 5, ..., each with its butterfly), O(n·Σ factors) instead of the direct DFT's O(n²); a prime size degenerates to that
 * DFT, still correct. No npm FFT fits: fft.js (the well-kept one) takes powers of two only.
 */

const cache = new Map<number, { cos: Float64Array; sin: Float64Array; rev: Uint32Array }>();

function plan(n: number) {
  let p = cache.get(n);
  if (p) return p;
  const cos = new Float64Array(n / 2);
  const sin = new Float64Array(n / 2);
  for (let i = 0; i < n / 2; i++) {
    cos[i] = Math.cos((2 * Math.PI * i) / n);
    sin[i] = -Math.sin((2 * Math.PI * i) / n);
  }
  const bits = Math.log2(n);
  const rev = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    let r = 0;
    for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
    rev[i] = r;
  }
  p = { cos, sin, rev };
  cache.set(n, p);
  return p;
}

/** In-place forward DFT of (re, im), X[k] = Σ x[n] e^{-2πikn/N}, for any length. */
export function fft(re: Float64Array, im: Float64Array): void {
  const n = re.length;
  if (n < 2) return;
  if ((n & (n - 1)) !== 0) return mixedRadix(re, im);
  const { cos, sin, rev } = plan(n);
  for (let i = 0; i < n; i++) {
    const j = rev[i]!;
    if (j > i) {
      [re[i], re[j]] = [re[j]!, re[i]!];
      [im[i], im[j]] = [im[j]!, im[i]!];
    }
  }
  for (let size = 2; size <= n; size <<= 1) {
    const half = size >> 1;
    const stride = n / size;
    for (let start = 0; start < n; start += size) {
      for (let k = 0; k < half; k++) {
        const wr = cos[k * stride]!;
        const wi = sin[k * stride]!;
        const a = start + k;
        const b = a + half;
        const tr = re[b]! * wr - im[b]! * wi;
        const ti = re[b]! * wi + im[b]! * wr;
        re[b] = re[a]! - tr;
        im[b] = im[a]! - ti;
        re[a] = re[a]! + tr;
        im[a] = im[a]! + ti;
      }
    }
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
  const zr = frame.subarray(0, h);
  const zi = im.subarray(0, h);
  fft(zr, zi);
  out[0] = (zr[0]! + zi[0]!) ** 2;
  out[h] = (zr[0]! - zi[0]!) ** 2;
  const { cos, sin } = halfTwiddle(frame.length);
  for (let k = 1; k < h; k++) {
    const ar = zr[k]!, ai = zi[k]!, br = zr[h - k]!, bi = -zi[h - k]!; // Z[k], conj Z[h−k]
    const er = (ar + br) / 2, ei = (ai + bi) / 2;
    const dr = (ar - br) / 2, di = (ai - bi) / 2; // O = d / i = (di, −dr)
    const or = di, oi = -dr;
    const xr = er + or * cos[k]! - oi * sin[k]!;
    const xi = ei + or * sin[k]! + oi * cos[k]!;
    out[k] = xr * xr + xi * xi;
  }
  return out;
}

interface MixedPlan {
  /** Radices, outermost first: 4s, then 2s, 3s, 5s and any larger primes. */
  factors: number[];
  /** W_n^k = cos[k] + i·sin[k] = e^{-2πik/n}, k < n. */
  cos: Float64Array;
  sin: Float64Array;
  /** The input, copied (the recursion reads it while writing re/im). */
  inRe: Float64Array;
  inIm: Float64Array;
  /** One butterfly's p twiddled inputs. */
  tRe: Float64Array;
  tIm: Float64Array;
}

const mixedPlans = new Map<number, MixedPlan>();

function factorise(n: number): number[] {
  const out: number[] = [];
  for (const p of [4, 2]) while (n % p === 0) (out.push(p), (n /= p));
  for (let p = 3; n > 1; p += 2) {
    if (p * p > n) p = n;
    while (n % p === 0) (out.push(p), (n /= p));
  }
  return out;
}

function mixedPlan(n: number): MixedPlan {
  let p = mixedPlans.get(n);
  if (p) return p;
  const factors = factorise(n);
  const cos = new Float64Array(n);
  const sin = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    cos[k] = Math.cos((2 * Math.PI * k) / n);
    sin[k] = -Math.sin((2 * Math.PI * k) / n);
  }
  const maxP = Math.max(...factors);
  p = { factors, cos, sin, inRe: new Float64Array(n), inIm: new Float64Array(n), tRe: new Float64Array(maxP), tIm: new Float64Array(maxP) };
  mixedPlans.set(n, p);
  return p;
}

function mixedRadix(re: Float64Array, im: Float64Array): void {
  const pl = mixedPlan(re.length);
  pl.inRe.set(re);
  pl.inIm.set(im);
  stage(pl, re, im, 0, 0, 1, re.length, 0);
}

/**
 * out[o .. o+len) = DFT_len of in[i], in[i+stride], ... (len = the product of factors[f..]). Each of the p = factors[f]
 * decimated subsequences is transformed into its slice out[o + q·m .. +m), m = len/p; then for each k < m the p values
 * Y_q[k]·W_len^{qk} go through a p-point DFT into out[o + k + m·s], s < p (twiddles from the size-n table: W_len^j =
 * W_n^{j·stride}). Radices 2, 4 and 5 have their butterflies written out (KISS FFT's), any other a generic one.
 */
function stage(pl: MixedPlan, outRe: Float64Array, outIm: Float64Array, o: number, i: number, stride: number, len: number, f: number): void {
  const { inRe, inIm } = pl;
  if (len === 1) {
    outRe[o] = inRe[i]!;
    outIm[o] = inIm[i]!;
    return;
  }
  const p = pl.factors[f]!;
  const m = len / p;
  for (let q = 0; q < p; q++) stage(pl, outRe, outIm, o + q * m, i + q * stride, stride * p, m, f + 1);
  const { cos, sin, tRe, tIm } = pl;
  for (let k = 0; k < m; k++) {
    // t_q = Y_q[k] · W_n^{q·k·stride} (q·k·stride < len·stride = n)
    for (let q = 0, w = 0; q < p; q++, w += k * stride) {
      const a = o + q * m + k;
      const xr = outRe[a]!;
      const xi = outIm[a]!;
      tRe[q] = xr * cos[w]! - xi * sin[w]!;
      tIm[q] = xr * sin[w]! + xi * cos[w]!;
    }
    const at = o + k;
    if (p === 4) {
      const ar = tRe[0]! + tRe[2]!, ai = tIm[0]! + tIm[2]!, br = tRe[0]! - tRe[2]!, bi = tIm[0]! - tIm[2]!;
      const cr = tRe[1]! + tRe[3]!, ci = tIm[1]! + tIm[3]!, dr = tRe[1]! - tRe[3]!, di = tIm[1]! - tIm[3]!;
      outRe[at] = ar + cr; outIm[at] = ai + ci;
      outRe[at + m] = br + di; outIm[at + m] = bi - dr; // b − i·d
      outRe[at + 2 * m] = ar - cr; outIm[at + 2 * m] = ai - ci;
      outRe[at + 3 * m] = br - di; outIm[at + 3 * m] = bi + dr; // b + i·d
    } else if (p === 2) {
      outRe[at] = tRe[0]! + tRe[1]!; outIm[at] = tIm[0]! + tIm[1]!;
      outRe[at + m] = tRe[0]! - tRe[1]!; outIm[at + m] = tIm[0]! - tIm[1]!;
    } else if (p === 5) {
      butterfly5(tRe, tIm, outRe, outIm, at, m);
    } else {
      const pStep = cos.length / p; // W_p^r = W_n^{r·n/p}
      for (let s = 0; s < p; s++) {
        let sr = tRe[0]!;
        let si = tIm[0]!;
        for (let q = 1; q < p; q++) {
          const w = ((q * s) % p) * pStep;
          sr += tRe[q]! * cos[w]! - tIm[q]! * sin[w]!;
          si += tRe[q]! * sin[w]! + tIm[q]! * cos[w]!;
        }
        outRe[at + m * s] = sr;
        outIm[at + m * s] = si;
      }
    }
  }
}

/** W_5 = e^{-2πi/5} and W_5²: the constants of the 5-point butterfly. */
const Y1R = Math.cos((2 * Math.PI) / 5), Y1I = -Math.sin((2 * Math.PI) / 5);
const Y2R = Math.cos((4 * Math.PI) / 5), Y2I = -Math.sin((4 * Math.PI) / 5);

/** The 5-point DFT of t (KISS FFT's kf_bfly5): the conjugate-symmetric pairs (1, 4) and (2, 3) share their products. */
function butterfly5(tRe: Float64Array, tIm: Float64Array, outRe: Float64Array, outIm: Float64Array, at: number, m: number): void {
  const r0 = tRe[0]!, i0 = tIm[0]!;
  const r7 = tRe[1]! + tRe[4]!, i7 = tIm[1]! + tIm[4]!, r10 = tRe[1]! - tRe[4]!, i10 = tIm[1]! - tIm[4]!;
  const r8 = tRe[2]! + tRe[3]!, i8 = tIm[2]! + tIm[3]!, r9 = tRe[2]! - tRe[3]!, i9 = tIm[2]! - tIm[3]!;
  outRe[at] = r0 + r7 + r8; outIm[at] = i0 + i7 + i8;
  const r5 = r0 + r7 * Y1R + r8 * Y2R, i5 = i0 + i7 * Y1R + i8 * Y2R;
  const r6 = i10 * Y1I + i9 * Y2I, i6 = -(r10 * Y1I + r9 * Y2I);
  outRe[at + m] = r5 - r6; outIm[at + m] = i5 - i6;
  outRe[at + 4 * m] = r5 + r6; outIm[at + 4 * m] = i5 + i6;
  const r11 = r0 + r7 * Y2R + r8 * Y1R, i11 = i0 + i7 * Y2R + i8 * Y1R;
  const r12 = -i10 * Y2I + i9 * Y1I, i12 = r10 * Y2I - r9 * Y1I;
  outRe[at + 2 * m] = r11 + r12; outIm[at + 2 * m] = i11 + i12;
  outRe[at + 3 * m] = r11 - r12; outIm[at + 3 * m] = i11 - i12;
}
