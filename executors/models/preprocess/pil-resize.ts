/**
 * PIL-compatible resampling of 8-bit RGB images (Pillow's libImaging/Resample.c), so a tower served from a
 * Hugging Face folder sees the pixel_values that Python transformers' image processors compute: separable
 * convolution, horizontal pass first (into 8-bit rows, as Pillow stores them), then vertical; the filter's support
 * is scaled by the downscale factor (antialiasing); coefficients are normalised per output pixel and rounded to
 * 22-bit fixed point. sharp's kernels differ (measured: 9e-2 embedding error after a resize).
 */
import type { RgbImage } from './image.js';

export type PilFilter = 'bilinear' | 'bicubic';

/** transformers' `resample` integers (PIL.Image.Resampling) the towers use. */
export const PIL_RESAMPLE: Readonly<Record<number, PilFilter>> = { 2: 'bilinear', 3: 'bicubic' };

const FILTERS: Record<PilFilter, { support: number; fn: (x: number) => number }> = {
  bilinear: { support: 1, fn: (x) => { x = Math.abs(x); return x < 1 ? 1 - x : 0; } },
  bicubic: {
    support: 2,
    fn: (x) => {
      const a = -0.5; // Pillow's bicubic (Keys) coefficient
      x = Math.abs(x);
      if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
      if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
      return 0;
    },
  },
};

const PRECISION_BITS = 32 - 8 - 2;
const ONE = 2 ** PRECISION_BITS;
const HALF = 2 ** (PRECISION_BITS - 1);

interface Coeffs { ksize: number; bounds: Int32Array; kk: Int32Array }

/** precompute_coeffs + normalize_coeffs_8bpc for one axis (box = the whole input). */
function coefficients(inSize: number, outSize: number, filter: PilFilter): Coeffs {
  const { support: base, fn } = FILTERS[filter];
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = base * filterScale;
  const ksize = Math.ceil(support) * 2 + 1;
  const bounds = new Int32Array(outSize * 2);
  const kk = new Int32Array(outSize * ksize);
  const k = new Float64Array(ksize);
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    const xmin = Math.max(0, Math.trunc(center - support + 0.5));
    const xmax = Math.min(inSize, Math.trunc(center + support + 0.5)) - xmin;
    let ww = 0;
    for (let x = 0; x < xmax; x++) {
      k[x] = fn((x + xmin - center + 0.5) / filterScale);
      ww += k[x]!;
    }
    for (let x = 0; x < xmax; x++) {
      const w = ww !== 0 ? k[x]! / ww : k[x]!;
      kk[xx * ksize + x] = Math.trunc(w < 0 ? -0.5 + w * ONE : 0.5 + w * ONE);
    }
    bounds[xx * 2] = xmin;
    bounds[xx * 2 + 1] = xmax;
  }
  return { ksize, bounds, kk };
}

/** Pillow's clip8: the fixed-point sum back to a byte (floor division = its arithmetic shift). */
const clip8 = (ss: number) => (ss <= 0 ? 0 : ss >= ONE * 256 ? 255 : Math.floor(ss / ONE));

/**
 * `img` resized to width x height as `PIL.Image.resize((width, height), resample)` does (no box, no
 * reducing_gap); the same size returns a copy, as Pillow does.
 */
export function pilResize(img: RgbImage, width: number, height: number, filter: PilFilter): RgbImage {
  const { width: W, height: H } = img;
  if (W === width && H === height) return { data: img.data.slice(), width, height };
  const horiz = coefficients(W, width, filter);
  const vert = coefficients(H, height, filter);
  let src = img.data;
  let srcW = W;
  // Only the source rows the vertical pass reads are resampled horizontally (Pillow's ybox).
  const first = vert.bounds[0]!;
  const last = vert.bounds[(height - 1) * 2]! + vert.bounds[(height - 1) * 2 + 1]!;
  let rowOffset = 0;
  if (W !== width) {
    const rows = last - first;
    const tmp = new Uint8Array(rows * width * 3);
    for (let y = 0; y < rows; y++) {
      const inRow = (y + first) * W * 3;
      for (let xx = 0; xx < width; xx++) {
        const xmin = horiz.bounds[xx * 2]!;
        const xmax = horiz.bounds[xx * 2 + 1]!;
        const k = xx * horiz.ksize;
        let s0 = HALF, s1 = HALF, s2 = HALF;
        for (let x = 0; x < xmax; x++) {
          const w = horiz.kk[k + x]!;
          const p = inRow + (x + xmin) * 3;
          s0 += src[p]! * w;
          s1 += src[p + 1]! * w;
          s2 += src[p + 2]! * w;
        }
        const o = (y * width + xx) * 3;
        tmp[o] = clip8(s0);
        tmp[o + 1] = clip8(s1);
        tmp[o + 2] = clip8(s2);
      }
    }
    src = tmp;
    srcW = width;
    rowOffset = first;
  }
  if (H === height) return { data: src as Uint8Array, width, height };
  const out = new Uint8Array(height * width * 3);
  for (let yy = 0; yy < height; yy++) {
    const ymin = vert.bounds[yy * 2]! - rowOffset;
    const ymax = vert.bounds[yy * 2 + 1]!;
    const k = yy * vert.ksize;
    for (let xx = 0; xx < width; xx++) {
      let s0 = HALF, s1 = HALF, s2 = HALF;
      for (let y = 0; y < ymax; y++) {
        const w = vert.kk[k + y]!;
        const p = ((y + ymin) * srcW + xx) * 3;
        s0 += src[p]! * w;
        s1 += src[p + 1]! * w;
        s2 += src[p + 2]! * w;
      }
      const o = (yy * width + xx) * 3;
      out[o] = clip8(s0);
      out[o + 1] = clip8(s1);
      out[o + 2] = clip8(s2);
    }
  }
  return { data: out, width, height };
}
