/**
 * Image preprocessing: bytes → sharp decode (auto-orient, RGB) → resize to the grid → normalise → patches.
 * `patches` layout follows Qwen2-VL: the size is rounded to multiples of patch_size*merge_size within
 * [min_pixels, max_pixels] (aspect kept), and patches are emitted in merge-window order so the graph's 2x2
 * merge is a plain reshape. Corrupt or truncated input → MODEL_INPUT_CORRUPT.
 */
import sharp from 'sharp';
import { modelErrors } from '../errors.js';
import type { ImagePreprocessing, PilImageSteps } from '../manifest.js';
import { pilResize } from './pil-resize.js';

/** Decoded pixels, HWC uint8 RGB. */
export interface RgbImage { data: Uint8Array; width: number; height: number }

/** One image or video clip ready for a patches-layout vision encoder. */
export interface VisionInput {
  /** [numPatches, patchDim] row-major. */
  patches: Float32Array;
  /** [numPatches, 2] (row, col) in patch units. */
  positionIds: BigInt64Array;
  /** Grid in patches: t = temporal groups (1 for an image), h and w = rows and columns. */
  grid: { t: number; h: number; w: number };
  patchDim: number;
  /** Output tokens = t * h * w / merge². */
  tokens: number;
}

/** Guard against decompression bombs before the size rule applies. */
export const MAX_DECODE_PIXELS = 100_000_000;
const MAX_ASPECT = 200;

/** Qwen2-VL `smart_resize`: multiples of `factor`, pixel count within [minPixels, maxPixels], aspect ratio kept. */
export function smartResize(height: number, width: number, o: { factor: number; minPixels: number; maxPixels: number }): { height: number; width: number } {
  const { factor, minPixels, maxPixels } = o;
  if (Math.max(height, width) / Math.min(height, width) > MAX_ASPECT) {
    throw modelErrors.invalid(`image aspect ratio must be at most ${MAX_ASPECT}, got ${width}x${height}`);
  }
  let h = Math.max(factor, Math.round(height / factor) * factor);
  let w = Math.max(factor, Math.round(width / factor) * factor);
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.max(factor, Math.floor(height / beta / factor) * factor);
    w = Math.max(factor, Math.floor(width / beta / factor) * factor);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / factor) * factor;
    w = Math.ceil((width * beta) / factor) * factor;
  }
  return { height: h, width: w };
}

/** The image format the first bytes announce (what a corrupt file claimed to be), or undefined. */
function announcedFormat(bytes: Uint8Array): string | undefined {
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString('latin1');
  if (bytes[0] === 0x89 && ascii(1, 4) === 'PNG') return 'PNG';
  if (bytes[0] === 0xff && bytes[1] === 0xd8) return 'JPEG';
  if (ascii(0, 4) === 'GIF8') return 'GIF';
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'WebP';
  return undefined;
}

function decodeError(e: unknown, bytes: Uint8Array) {
  const msg = e instanceof Error ? e.message : String(e);
  if (/pixel limit/i.test(msg)) return modelErrors.tooLarge(`image exceeds ${MAX_DECODE_PIXELS} pixels`);
  // The decoder's first line, whole: it may end in a colon with its detail on later lines or nowhere ("Input buffer has
  // corrupt header:"), so a sentence is made of it with what the bytes claim to be.
  const reason = msg.split('\n')[0]!.trim().replace(/[:\s]+$/, '') || 'unreadable data';
  const format = announcedFormat(bytes);
  const claimed = format ? `: the ${bytes.length} bytes start as a ${format} file but are damaged or cut short` : '';
  return modelErrors.corrupt(`image cannot be decoded (${reason})${claimed}`, e);
}

/** Width and height after EXIF orientation, without decoding pixels. */
export async function imageSize(bytes: Uint8Array): Promise<{ width: number; height: number }> {
  try {
    const m = await sharp(bytes, { limitInputPixels: MAX_DECODE_PIXELS }).metadata();
    const o = m.autoOrient ?? m;
    if (!o.width || !o.height) throw new Error('no dimensions');
    return { width: o.width, height: o.height };
  } catch (e) {
    throw decodeError(e, bytes);
  }
}

/** Decodes and resizes (bicubic, exact size) to RGB. */
export function decodeResized(bytes: Uint8Array, width: number, height: number): Promise<RgbImage> {
  return decodeRgb(bytes, { width, height });
}

/** Decodes to RGB (EXIF orientation applied, alpha dropped), resized by sharp only when `size` is given. */
export async function decodeRgb(bytes: Uint8Array, size?: { width: number; height: number }): Promise<RgbImage> {
  try {
    let img = sharp(bytes, { failOn: 'truncated', autoOrient: true, limitInputPixels: MAX_DECODE_PIXELS })
      .removeAlpha()
      .toColourspace('srgb');
    if (size) img = img.resize(size.width, size.height, { fit: 'fill', kernel: 'cubic' });
    const { data, info } = await img
      .raw()
      .toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`expected 3 channels, got ${info.channels}`);
    return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height };
  } catch (e) {
    throw decodeError(e, bytes);
  }
}

function requirePatches(pre: ImagePreprocessing) {
  if (pre.layout !== 'patches' || pre.min_pixels === undefined || pre.max_pixels === undefined) {
    throw modelErrors.unsupported(`preprocessing layout '${pre.layout}' is not the patches layout`);
  }
  return { minPixels: pre.min_pixels, maxPixels: pre.max_pixels, factor: pre.patch_size * pre.merge_size };
}

/**
 * Frames (all the same size, a multiple of patch_size*merge_size, count a multiple of temporal_patch_size) →
 * patches in merge-window order: for each temporal group, for each merge window (row-major), for each patch in
 * the window (row-major); each patch flattened as [channel][temporal][y][x], normalised with mean/std.
 */
export function patchify(frames: readonly RgbImage[], pre: ImagePreprocessing): VisionInput {
  const ps = pre.patch_size;
  const tp = pre.temporal_patch_size;
  const m = pre.merge_size;
  const { width: W, height: H } = frames[0]!;
  if (frames.length % tp !== 0) throw modelErrors.invalid(`frame count ${frames.length} is not a multiple of ${tp}`);
  if (H % (ps * m) !== 0 || W % (ps * m) !== 0) throw modelErrors.invalid(`frame size ${W}x${H} is not a multiple of ${ps * m}`);
  const gt = frames.length / tp;
  const gh = H / ps;
  const gw = W / ps;
  if (pre.max_grid_side !== undefined && Math.max(gh, gw) > pre.max_grid_side) {
    throw modelErrors.tooLarge(`image grid ${gw}x${gh} patches exceeds ${pre.max_grid_side} per side`);
  }
  const patchDim = 3 * tp * ps * ps;
  const n = gt * gh * gw;
  const patches = new Float32Array(n * patchDim);
  const positionIds = new BigInt64Array(n * 2);
  const scale = [0, 1, 2].map((c) => 1 / (255 * pre.std[c]!));
  const shift = [0, 1, 2].map((c) => pre.mean[c]! / pre.std[c]!);
  let k = 0;
  for (let t = 0; t < gt; t++) {
    for (let bh = 0; bh < gh / m; bh++) {
      for (let bw = 0; bw < gw / m; bw++) {
        for (let mh = 0; mh < m; mh++) {
          for (let mw = 0; mw < m; mw++, k++) {
            const row = bh * m + mh;
            const col = bw * m + mw;
            positionIds[2 * k] = BigInt(row);
            positionIds[2 * k + 1] = BigInt(col);
            let o = k * patchDim;
            for (let c = 0; c < 3; c++) {
              for (let ti = 0; ti < tp; ti++) {
                const px = frames[t * tp + ti]!.data;
                for (let y = 0; y < ps; y++) {
                  let src = ((row * ps + y) * W + col * ps) * 3 + c;
                  for (let x = 0; x < ps; x++, src += 3) patches[o++] = px[src]! * scale[c]! - shift[c]!;
                }
              }
            }
          }
        }
      }
    }
  }
  return { patches, positionIds, grid: { t: gt, h: gh, w: gw }, patchDim, tokens: (gt * gh * gw) / (m * m) };
}

/** Encoded image bytes → patches (the image is repeated temporal_patch_size times, as Qwen2-VL does). */
export async function preprocessImage(bytes: Uint8Array, pre: ImagePreprocessing): Promise<VisionInput> {
  const limits = requirePatches(pre);
  const size = await imageSize(bytes);
  const target = smartResize(size.height, size.width, limits);
  const img = await decodeResized(bytes, target.width, target.height);
  return patchify(Array(pre.temporal_patch_size).fill(img), pre);
}

export interface PixelValues { pixelValues: Float32Array; dims: [1, 3, number, number] }

/**
 * transformers' get_resize_output_image_size for `{shortest_edge}` (default_to_square=False): the short side
 * becomes `edge`, the long side int(edge * long / short).
 */
export function shortestEdgeSize(height: number, width: number, edge: number): { height: number; width: number } {
  const long = Math.floor((edge * Math.max(height, width)) / Math.min(height, width));
  return width <= height ? { height: long, width: edge } : { height: edge, width: long };
}

/**
 * Decoded RGB → pixel_values [1, 3, H, W] as Python transformers' CLIP/SigLIP image processors compute them:
 * PIL resize, center crop (top = ⌊(h − crop_h) / 2⌋), rescale then normalise in float32 (numpy's order and precision).
 */
export function pilPixelValues(img: RgbImage, pre: ImagePreprocessing & { pil: PilImageSteps }): PixelValues {
  const { resize, resample, center_crop: crop, rescale_factor: rescale, normalize } = pre.pil;
  let size = { height: img.height, width: img.width };
  if (resize) size = 'shortest_edge' in resize ? shortestEdgeSize(img.height, img.width, resize.shortest_edge) : resize;
  const resized = pilResize(img, size.width, size.height, resample);
  const H = crop?.height ?? size.height;
  const W = crop?.width ?? size.width;
  if (H > size.height || W > size.width) {
    throw modelErrors.invalid(`image resized to ${size.width}x${size.height} is smaller than the center crop ${W}x${H}`);
  }
  if (pre.image_size && (pre.image_size.height !== H || pre.image_size.width !== W)) {
    throw modelErrors.unsupported(`preprocessing gives ${W}x${H} pixel_values but the model takes ${pre.image_size.width}x${pre.image_size.height}`);
  }
  const top = Math.floor((size.height - H) / 2);
  const left = Math.floor((size.width - W) / 2);
  const f = Math.fround;
  const mean = pre.mean.map(f);
  const std = pre.std.map(f);
  const out = new Float32Array(3 * H * W);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const src = ((y + top) * size.width + x + left) * 3;
      for (let c = 0; c < 3; c++) {
        let v = f(rescale === undefined ? resized.data[src + c]! : resized.data[src + c]! * rescale);
        if (normalize) v = f(f(v - mean[c]!) / std[c]!);
        out[(c * H + y) * W + x] = v;
      }
    }
  }
  return { pixelValues: out, dims: [1, 3, H, W] };
}

/** For `nchw` models (CLIP/SigLIP towers): fixed-size normalised pixel_values [1, 3, H, W]. */
export async function preprocessImageNchw(bytes: Uint8Array, pre: ImagePreprocessing): Promise<PixelValues> {
  if (pre.layout !== 'nchw' || !pre.image_size) throw modelErrors.unsupported(`preprocessing layout '${pre.layout}' is not nchw`);
  if (pre.pil) return pilPixelValues(await decodeRgb(bytes), { ...pre, pil: pre.pil });
  const { height: H, width: W } = pre.image_size;
  const img = await decodeResized(bytes, W, H);
  const out = new Float32Array(3 * H * W);
  for (let c = 0; c < 3; c++) {
    for (let i = 0; i < H * W; i++) out[c * H * W + i] = (img.data[i * 3 + c]! / 255 - pre.mean[c]!) / pre.std[c]!;
  }
  return { pixelValues: out, dims: [1, 3, H, W] };
}
