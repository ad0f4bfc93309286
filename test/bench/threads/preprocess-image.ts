/**
 * A preprocessing thread for the Eric benchmark's direct baseline (a PreprocessPool worker, like Eric's own
 * router threads): JPEG bytes → the encoder's input (decode, resize, patchify: run.ts's preprocessImage).
 * Not a benchmark module (main.ts only runs the files directly in test/bench).
 */
import { servePreprocess } from '../../../executors/common/preprocess-pool.js';
import type { ImagePreprocessing } from '../../../executors/models/manifest.js';
import { type VisionInput, preprocessImage } from '../../../executors/models/preprocess/image.js';

servePreprocess<ImagePreprocessing, Uint8Array, VisionInput>(async (pre) => async (bytes) => {
  const item = await preprocessImage(bytes, pre);
  return { value: item, transfer: [item.patches.buffer as ArrayBuffer, item.positionIds.buffer as ArrayBuffer] };
});
