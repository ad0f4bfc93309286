import test from 'ava';
import { makeImage } from '../../../../helpers/media.js';
import { preprocessImage, smartResize } from '../../../../../executors/models/preprocess/image.js';
import { ModelErrorCode } from '../../../../../executors/models/errors.js';
import type { ImagePreprocessing } from '../../../../../executors/models/manifest.js';

const PRE: ImagePreprocessing = {
  layout: 'patches', patch_size: 14, temporal_patch_size: 2, merge_size: 2, min_pixels: 3136, max_pixels: 200704,
  mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], max_grid_side: 256, max_patches_per_run: 1024,
};
const LIMITS = { factor: 28, minPixels: 3136, maxPixels: 200704 };

test('smartResize rounds each side to a multiple of 28', (t) => {
  t.deepEqual(smartResize(100, 150, LIMITS), { height: 112, width: 140 });
});

test('smartResize keeps a large image under max_pixels with the aspect ratio kept', (t) => {
  const r = smartResize(2000, 3000, LIMITS);
  t.true(r.height * r.width <= LIMITS.maxPixels);
  t.is(r.height % 28, 0);
  t.is(r.width % 28, 0);
  t.true(Math.abs(r.width / r.height - 1.5) < 0.1);
});

test('smartResize scales a tiny image up to at least min_pixels', (t) => {
  const r = smartResize(10, 10, LIMITS);
  t.true(r.height * r.width >= LIMITS.minPixels);
});

test('an extreme aspect ratio is rejected as invalid input', (t) => {
  t.throws(() => smartResize(10, 5000, LIMITS), { message: /aspect ratio/ });
});

test('patches have the Qwen2-VL shape and merge-window order', async (t) => {
  const v = await preprocessImage(await makeImage(56, 84), PRE);
  t.deepEqual(v.grid, { t: 1, h: 6, w: 4 });
  t.is(v.patchDim, 3 * 2 * 14 * 14);
  t.is(v.patches.length, 24 * v.patchDim);
  t.is(v.tokens, 6);
  // first merge window covers rows 0-1, cols 0-1 in row-major order, then the window to its right
  const pos = Array.from(v.positionIds.subarray(0, 12), Number);
  t.deepEqual(pos, [0, 0, 0, 1, 1, 0, 1, 1, 0, 2, 0, 3]);
});

test('patch values are normalised with mean and std', async (t) => {
  const v = await preprocessImage(await makeImage(56, 56), PRE);
  let min = Infinity;
  let max = -Infinity;
  for (const x of v.patches) { min = Math.min(min, x); max = Math.max(max, x); }
  t.true(min >= -1 - 1e-6 && max <= 1 + 1e-6);
});

test('a corrupt image is rejected with MODEL_INPUT_CORRUPT', async (t) => {
  const e = await t.throwsAsync(preprocessImage(Buffer.from('definitely not an image'), PRE), { message: /cannot be decoded/ });
  t.is((e as { code?: string }).code, ModelErrorCode.INPUT_CORRUPT);
});

test('a PNG with a corrupt header is refused with a whole sentence, not a dangling colon', async (t) => {
  const png = await makeImage(64, 64);
  const corrupt = Buffer.concat([png.subarray(0, 8), Buffer.alloc(32, 0xee)]);
  const e = await t.throwsAsync(preprocessImage(corrupt, PRE));
  t.is(e!.message, 'image cannot be decoded (Input buffer has corrupt header): the 40 bytes start as a PNG file but are damaged or cut short');
});

test('a truncated PNG is rejected with MODEL_INPUT_CORRUPT', async (t) => {
  const png = await makeImage(64, 64);
  const e = await t.throwsAsync(preprocessImage(png.subarray(0, png.length - 40), PRE));
  t.is((e as { code?: string }).code, ModelErrorCode.INPUT_CORRUPT);
});

test('a truncated JPEG is rejected with MODEL_INPUT_CORRUPT', async (t) => {
  const jpg = await makeImage(64, 64, { format: 'jpeg' });
  const e = await t.throwsAsync(preprocessImage(jpg.subarray(0, Math.floor(jpg.length / 2)), PRE));
  t.is((e as { code?: string }).code, ModelErrorCode.INPUT_CORRUPT);
});
