/**
 * Eric's preprocessing thread (a PreprocessPool worker): loaded bytes → model inputs, per item.
 *   image: one encoded image → patches [N, patch_dim] f32 + position_ids [N, 2] i64 (+ grid, tokens)
 *   video: encoded frames → the same, with temporal groups
 *   audio: a WAV file → log-mel [n_mels, frames] f32
 * Decode failures are MODEL_INPUT_CORRUPT (422), size limits MODEL_INPUT_TOO_LARGE (413).
 */
import { servePreprocess } from '../../common/preprocess-pool.js';
import { tensor, type Item } from '../../common/protocol.js';
import type { Manifest } from '../../models/manifest.js';
import { modelErrors } from '../../models/errors.js';
import { preprocessAudio } from '../../models/preprocess/audio.js';
import { preprocessImage, type VisionInput } from '../../models/preprocess/image.js';
import { preprocessVideo } from '../../models/preprocess/video.js';

export interface PreprocessSettings { preprocessing: Manifest['preprocessing']; maxFrames: number }
export interface PreprocessInput { modality: 'image' | 'video' | 'audio'; parts: Uint8Array[] }
export type PreprocessOutput = Pick<Item, 'meta' | 'tensors'>;

const visionItem = (v: VisionInput): PreprocessOutput => ({
  meta: { grid: v.grid, tokens: v.tokens, patchDim: v.patchDim },
  tensors: {
    patches: tensor('float32', [v.patches.length / v.patchDim, v.patchDim], v.patches),
    position_ids: tensor('int64', [v.positionIds.length / 2, 2], v.positionIds),
  },
});

function single(parts: Uint8Array[], what: string): Uint8Array {
  if (parts.length !== 1) throw modelErrors.invalid(`${what} must be one file, got ${parts.length} parts`);
  return parts[0]!;
}

servePreprocess<PreprocessSettings, PreprocessInput, PreprocessOutput>(async ({ preprocessing: pre, maxFrames }) => async ({ modality, parts }) => {
  let out: PreprocessOutput;
  if (modality === 'image') {
    if (!pre.image) throw modelErrors.unsupported('this model takes no images');
    out = visionItem(await preprocessImage(single(parts, 'an image'), pre.image));
  } else if (modality === 'video') {
    if (!pre.image || !pre.video) throw modelErrors.unsupported('this model takes no video');
    if (parts.length > maxFrames) throw modelErrors.tooLarge(`a video may have at most ${maxFrames} frames, got ${parts.length}`);
    out = visionItem(await preprocessVideo(parts, pre.image, pre.video));
  } else {
    if (!pre.audio) throw modelErrors.unsupported('this model takes no audio');
    const mel = preprocessAudio(single(parts, 'an audio clip'), pre.audio);
    out = { meta: {}, tensors: { mel: tensor('float32', [mel.nMels, mel.frames], mel.data) } };
  }
  return { value: out, transfer: Object.values(out.tensors).map((t) => t.data.buffer as ArrayBuffer) };
});
