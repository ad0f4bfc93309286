/**
 * A preprocessing thread for the CLIP benchmark's direct baseline (a PreprocessPool worker, like Eric's router
 * threads): image bytes → pixel_values [1, 3, H, W] (decode, PIL-compatible resize, crop, normalise:
 * preprocessImageNchw). Not a benchmark module (main.ts only runs the files directly in test/bench).
 */
import { servePreprocess } from '../../../executors/common/preprocess-pool.js';
import type { ImagePreprocessing } from '../../../executors/models/manifest.js';
import { type PixelValues, preprocessImageNchw } from '../../../executors/models/preprocess/image.js';

servePreprocess<ImagePreprocessing, Uint8Array, PixelValues>(async (pre) => async (bytes) => {
  const item = await preprocessImageNchw(bytes, pre);
  return { value: item, transfer: [item.pixelValues.buffer as ArrayBuffer] };
});
