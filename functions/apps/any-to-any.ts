/**
 * The any-to-any app: text + images in (AnyToAnyTask over cornserve/tiny-vlm-a); the answer's text stream out, and
 * with `return_audio: true` also the answer spoken: the LLM streams the hidden state of each token it generates to
 * the audio generator (Geri, cornserve/tiny-audio-gen, through the sidecar), which voices every 4 tokens as they
 * come, as PCM16 chunks in `choices[0].delta.audio.data` (base64).
 *
 * With `return_audio` the text call and the speech call run at once with the same seed (so the LLM generates the
 * same answer for both: per-request seeded, batch-invariant sampling), and the reply interleaves text and audio
 * chunks in the order they are made.
 *
 *   {"model": "any-to-any", "return_audio": true, "messages": [{"role": "user", "content": [
 *     {"type": "text", "text": "Say what you see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}]}]}
 */
import { randomInt } from 'node:crypto';
import { defineApp, mergeStreams } from '../sdk/index.js';
import { AnyToAnyTask, anyToAnyInputSchema } from '../tasks/any-to-any.js';
import { chatChunkSchema } from '../tasks/index.js';

/** The same encoder ids as encoder-sharing and arena: the three apps share one image-encoder deployment. */
const ENCODER_MODEL_IDS = ['cornserve/tiny-vlm-a', 'cornserve/tiny-vlm-b'];
const anyToAny = new AnyToAnyTask({
  modelId: 'cornserve/tiny-vlm-a', modalities: ['image'], encoderModelIds: ENCODER_MODEL_IDS, audioModelId: 'cornserve/tiny-audio-gen',
  chunkSize: 4, leftContextSize: 2,
});

export default defineApp({
  name: 'any-to-any',
  tasks: { anyToAny },
  request: anyToAnyInputSchema.omit({ cornserve_embeddings: true }),
  response: chatChunkSchema,
  async serve(request) {
    if (!request.return_audio) return anyToAny.call(request);
    const same = { ...request, seed: request.seed ?? randomInt(2 ** 31) }; // one answer for the text and the speech
    return mergeStreams(await Promise.all([anyToAny.call({ ...same, return_audio: false }), anyToAny.call(same)]));
  },
});
