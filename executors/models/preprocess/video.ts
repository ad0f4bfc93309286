/**
 * Video preprocessing: a list of encoded frame images → uniformly sampled frames (at most max_frames, padded to a
 * multiple of temporal_patch_size by repeating the last) → one grid for all frames → patches with temporal merge.
 */
import { modelErrors } from '../errors.js';
import type { ImagePreprocessing, VideoPreprocessing } from '../manifest.js';
import { type VisionInput, decodeResized, imageSize, patchify, smartResize } from './image.js';

/** Indices of `min(total, maxFrames)` frames spread uniformly over [0, total-1] (linspace, rounded). */
export function sampleFrameIndices(total: number, maxFrames: number): number[] {
  if (total <= maxFrames) return Array.from({ length: total }, (_, i) => i);
  if (maxFrames === 1) return [0];
  return Array.from({ length: maxFrames }, (_, i) => Math.round((i * (total - 1)) / (maxFrames - 1)));
}

export async function preprocessVideo(frames: readonly Uint8Array[], pre: ImagePreprocessing, video: VideoPreprocessing): Promise<VisionInput> {
  if (frames.length === 0) throw modelErrors.invalid('video has no frames');
  if (pre.layout !== 'patches') throw modelErrors.unsupported(`video needs the patches layout, not '${pre.layout}'`);
  const idx = sampleFrameIndices(frames.length, video.max_frames);
  while (idx.length % pre.temporal_patch_size !== 0) idx.push(idx[idx.length - 1]!);
  const first = await imageSize(frames[idx[0]!]!);
  const size = smartResize(first.height, first.width, {
    factor: pre.patch_size * pre.merge_size, minPixels: video.min_pixels, maxPixels: video.max_pixels,
  });
  const decoded = new Map<number, Awaited<ReturnType<typeof decodeResized>>>();
  for (const i of new Set(idx)) decoded.set(i, await decodeResized(frames[i]!, size.width, size.height));
  return patchify(idx.map((i) => decoded.get(i)!), pre);
}
