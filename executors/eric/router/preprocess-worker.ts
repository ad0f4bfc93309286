/**
 * Eric's preprocessing thread (a PreprocessPool worker): loaded bytes → what the device worker needs, per item.
 *   image / video (patches layout): decode + resize to the model's grid (sharp), video frames sampled
 *     uniformly → `frames` u8 [unique frames, H, W, 3] + meta.frameIndex (which frame fills each temporal
 *     position: an image is its one frame repeated temporal_patch_size times). The worker patchifies, so the
 *     router → engine → worker path carries RGB bytes (8× less than float32 patches).
 *   image (nchw layout, CLIP/SigLIP towers): `pixel_values` f32 [1, 3, H, W].
 *   audio: a WAV file → `mel` f32 [n_mels, frames].
 * Decode failures are MODEL_INPUT_CORRUPT (422), size limits MODEL_INPUT_TOO_LARGE (413).
 */
import { servePreprocess } from '../../common/preprocess-pool.js';
import { tensor, type Item } from '../../../lib/executor-protocol.js';
import type { ImagePreprocessing, Manifest } from '../../models/manifest.js';
import { modelErrors } from '../../models/errors.js';
import { preprocessAudio } from '../../models/preprocess/audio.js';
import { type RgbImage, decodeResized, imageSize, preprocessImageNchw, smartResize } from '../../models/preprocess/image.js';
import { sampleFrameIndices } from '../../models/preprocess/video.js';

export interface PreprocessSettings { preprocessing: Manifest['preprocessing']; maxFrames: number }
export interface PreprocessInput { modality: 'image' | 'video' | 'audio'; parts: Uint8Array[] }
export type PreprocessOutput = Pick<Item, 'meta' | 'tensors'>;

function single(parts: Uint8Array[], what: string): Uint8Array {
  if (parts.length !== 1) throw modelErrors.invalid(`${what} must be one file, got ${parts.length} parts`);
  return parts[0]!;
}

/** Decodes the frames at `positions` (indices into `parts`) to one size within [minPixels, maxPixels]. */
async function decodeFrames(parts: Uint8Array[], positions: number[], pre: ImagePreprocessing, minPixels: number, maxPixels: number): Promise<PreprocessOutput> {
  const first = await imageSize(parts[positions[0]!]!);
  const size = smartResize(first.height, first.width, { factor: pre.patch_size * pre.merge_size, minPixels, maxPixels });
  const side = Math.max(size.height, size.width) / pre.patch_size;
  if (pre.max_grid_side !== undefined && side > pre.max_grid_side) {
    throw modelErrors.tooLarge(`image grid ${size.width / pre.patch_size}x${size.height / pre.patch_size} patches exceeds ${pre.max_grid_side} per side`);
  }
  const unique = [...new Set(positions)];
  const decoded: RgbImage[] = [];
  for (const i of unique) decoded.push(await decodeResized(parts[i]!, size.width, size.height));
  const frameBytes = size.width * size.height * 3;
  const frames = new Uint8Array(unique.length * frameBytes);
  decoded.forEach((d, k) => frames.set(d.data, k * frameBytes));
  return {
    meta: { layout: 'patches', frameIndex: positions.map((p) => unique.indexOf(p)) },
    tensors: { frames: tensor('uint8', [unique.length, size.height, size.width, 3], frames) },
  };
}

servePreprocess<PreprocessSettings, PreprocessInput, PreprocessOutput>(async ({ preprocessing: pre, maxFrames }) => async ({ modality, parts }) => {
  let out: PreprocessOutput;
  if (modality === 'audio') {
    if (!pre.audio) throw modelErrors.unsupported('this model takes no audio');
    const mel = preprocessAudio(single(parts, 'an audio clip'), pre.audio);
    out = { meta: {}, tensors: { mel: tensor('float32', [mel.nMels, mel.frames], mel.data) } };
  } else if (!pre.image) {
    throw modelErrors.unsupported(`this model takes no ${modality}`);
  } else if (modality === 'image' && pre.image.layout === 'nchw') {
    const { pixelValues, dims } = await preprocessImageNchw(single(parts, 'an image'), pre.image);
    out = { meta: { layout: 'nchw' }, tensors: { pixel_values: tensor('float32', dims, pixelValues) } };
  } else if (modality === 'image') {
    single(parts, 'an image');
    out = await decodeFrames(parts, Array(pre.image.temporal_patch_size).fill(0), pre.image, pre.image.min_pixels!, pre.image.max_pixels!);
  } else {
    if (!pre.video || pre.image.layout !== 'patches') throw modelErrors.unsupported('this model takes no video');
    if (parts.length === 0) throw modelErrors.invalid('video has no frames');
    if (parts.length > maxFrames) throw modelErrors.tooLarge(`a video may have at most ${maxFrames} frames, got ${parts.length}`);
    const idx = sampleFrameIndices(parts.length, pre.video.max_frames);
    while (idx.length % pre.image.temporal_patch_size !== 0) idx.push(idx[idx.length - 1]!);
    out = await decodeFrames(parts, idx, pre.image, pre.video.min_pixels, pre.video.max_pixels);
  }
  return { value: out, transfer: Object.values(out.tensors).map((t) => t.data.buffer as ArrayBuffer) };
});
