/**
 * The any-to-any app: text + images in (AnyToAnyTask over cornserve/tiny-vlm-a); a text stream out, and with
 * `return_audio: true` also speech: the LLM's hidden states go (sidecar) to the audio generator (Geri,
 * cornserve/tiny-audio-gen), which streams PCM16 chunks as `choices[0].delta.audio.data` (base64).
 *
 * With `return_audio` the text graph and the audio graph are dispatched concurrently (both LLM tasks share one
 * LLM deployment); the reply is the text chunks, then the audio chunks (generated meanwhile).
 *
 *   {"model": "any-to-any", "return_audio": true, "messages": [{"role": "user", "content": [
 *     {"type": "text", "text": "Say what you see"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}]}]}
 */
import { defineApp } from '../sdk/index.js';
import { AnyToAnyTask, anyToAnyInputSchema } from '../tasks/any-to-any.js';
import { chatChunkSchema, type ChatChunk } from '../tasks/openai.js';

/** The same encoder ids as encoder-sharing and arena: the three apps share one image-encoder deployment. */
const ENCODER_MODEL_IDS = ['cornserve/tiny-vlm-a', 'cornserve/tiny-vlm-b'];
const anyToAny = new AnyToAnyTask({ modelId: 'cornserve/tiny-vlm-a', modalities: ['image'], encoderModelIds: ENCODER_MODEL_IDS, audioModelId: 'cornserve/tiny-audio-gen' });

/** The text stream, then the audio stream (both already dispatched, so the audio is generated meanwhile). */
async function* concat(streams: AsyncIterable<ChatChunk>[]): AsyncGenerator<ChatChunk> {
  for (const s of streams) yield* s;
}

export default defineApp({
  name: 'any-to-any',
  tasks: { anyToAny },
  request: anyToAnyInputSchema.omit({ cornserve_embeddings: true }),
  response: chatChunkSchema,
  async serve(request) {
    if (!request.return_audio) return anyToAny.call(request);
    return concat(await Promise.all([anyToAny.call({ ...request, return_audio: false }), anyToAny.call(request)]));
  },
});
