/**
 * The mllm app: an OpenAI chat request with text and image_url / audio_url / video_url parts → the encoders
 * (Eric: one deployment per modality) → the LLM (cornserve/tiny-vlm-a) → a stream of chat chunks.
 * The embeddings go encoder → sidecar → LLM; they never pass through this app or the dispatcher.
 *
 *   POST /v1/chat/completions {"model": "mllm", "messages": [{"role": "user", "content": [
 *     {"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}]}]}
 */
import { defineApp } from '../sdk/index.js';
import { MLLMTask } from '../tasks/mllm.js';
import { chatChunkSchema, chatRequestSchema } from '../tasks/index.js';

/** The public request: a chat request (`cornserve_embeddings` is set by MLLMTask, never by clients). */
const request = chatRequestSchema.omit({ cornserve_embeddings: true });
const mllm = new MLLMTask({ modelId: 'cornserve/tiny-vlm-a', modalities: ['image', 'audio', 'video'] });

export default defineApp({
  name: 'mllm',
  tasks: { mllm },
  request,
  response: chatChunkSchema,
  async serve(request) {
    return mllm.call(request);
  },
});
