/**
 * PIL-compatible resampling (preprocess/pil-resize.ts) and the CLIP/SigLIP pixel_values built on it. The expected
 * bytes of the Pillow cases were produced by Pillow 9.4 (`Image.frombytes('RGB', (5, 4), src).resize(size, resample)`)
 * on this machine; the implementation agreed with Pillow bit for bit on nine random cases (up to 300x200 → 33x44).
 */
import test from 'ava';
import { pilResize } from '../../../../../executors/models/preprocess/pil-resize.js';
import { pilPixelValues, shortestEdgeSize } from '../../../../../executors/models/preprocess/image.js';
import type { ImagePreprocessing, PilImageSteps } from '../../../../../executors/models/manifest.js';

/** The 5x4 RGB source of the Pillow cases: byte i = (37 i + 11) mod 256. */
const SRC = { data: Uint8Array.from({ length: 5 * 4 * 3 }, (_, i) => (i * 37 + 11) % 256), width: 5, height: 4 };

test('resizing to the same size returns the pixels unchanged, as Pillow copies', (t) => {
  for (const f of ['bilinear', 'bicubic'] as const) t.deepEqual([...pilResize(SRC, 5, 4, f).data], [...SRC.data]);
});

test('a bilinear 2x downscale widens the triangle filter to support 2 (antialiasing): hand-computed [71, 209]', (t) => {
  // Output 0: centre 1.0, taps x = 0..2 with weights 0.75, 0.75, 0.25 (normalised /1.75): (0·3 + 100·3 + 200)/7 = 71.4.
  // Output 1: centre 3.0, taps x = 1..3 with weights 0.25, 0.75, 0.75: (100 + 200·3 + 255·3)/7 = 209.3.
  const row = { data: Uint8Array.from([0, 100, 200, 255].flatMap((v) => [v, v, v])), width: 4, height: 1 };
  t.deepEqual([...pilResize(row, 2, 1, 'bilinear').data], [71, 71, 71, 209, 209, 209]);
});

test('a bicubic downscale (a = -0.5) equals Pillow byte for byte', (t) => {
  t.deepEqual([...pilResize(SRC, 3, 3, 'bicubic').data],
    [66, 103, 147, 150, 78, 126, 169, 160, 84, 123, 164, 139, 95, 144, 149, 142, 98, 149, 179, 130, 138, 161, 150, 121, 114, 166, 119]);
});

test('a bilinear upscale (horizontal pass into bytes, then vertical) equals Pillow byte for byte', (t) => {
  t.deepEqual([...pilResize(SRC, 7, 6, 'bilinear').data], [
    11, 48, 85, 74, 111, 148, 154, 118, 155, 233, 14, 51, 129, 93, 130, 136, 173, 100, 199, 236, 17, 33, 70, 107, 96, 133, 170, 139, 140, 177, 127, 36,
    73, 114, 115, 152, 158, 140, 122, 221, 130, 39, 61, 98, 135, 124, 161, 174, 131, 168, 175, 27, 64, 101, 106, 143, 180, 168, 113, 150, 206, 30, 67,
    90, 127, 164, 153, 190, 105, 160, 197, 81, 56, 93, 130, 135, 172, 209, 123, 142, 179, 65, 59, 96, 119, 156, 193, 182, 146, 110, 189, 134, 80, 85,
    122, 159, 164, 201, 146, 134, 171, 135, 51, 88, 125, 140, 177, 214, 203, 94, 131, 210, 64, 101, 106, 143, 180, 185, 222, 76, 155, 192, 83, 72,
    109, 146,
  ]);
});

test('shortest_edge keeps the aspect ratio and truncates the long side, as transformers does', (t) => {
  t.deepEqual(shortestEdgeSize(200, 300, 32), { height: 32, width: 48 });
  t.deepEqual(shortestEdgeSize(301, 200, 32), { height: 48, width: 32 }); // 32·301/200 = 48.16
});

test('pixel_values: resize, center crop at ⌊(h − crop)/2⌋, rescale and normalise per channel into NCHW', (t) => {
  const pil: PilImageSteps = { resize: { shortest_edge: 4 }, resample: 'bicubic', center_crop: { height: 2, width: 4 }, rescale_factor: 1 / 255, normalize: true };
  const pre = { layout: 'nchw', patch_size: 2, temporal_patch_size: 1, merge_size: 1, image_size: { height: 2, width: 4 }, mean: [0.5, 0.25, 0], std: [0.5, 0.25, 1], pil } as ImagePreprocessing & { pil: PilImageSteps };
  // 4x5 image: shortest edge 4 → 4x5 unchanged; crop 2 rows starting at row ⌊(5 − 2)/2⌋ = 1.
  const img = { data: Uint8Array.from({ length: 4 * 5 * 3 }, (_, i) => (i * 7) % 256), width: 4, height: 5 };
  const { pixelValues, dims } = pilPixelValues(img, pre);
  t.deepEqual(dims, [1, 3, 2, 4]);
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < 2; y++) {
      for (let x = 0; x < 4; x++) {
        const v = img.data[((y + 1) * 4 + x) * 3 + c]! / 255;
        t.true(Math.abs(pixelValues[(c * 2 + y) * 4 + x]! - (v - pre.mean[c]!) / pre.std[c]!) < 1e-6);
      }
    }
  }
});
