/**
 * The live cross-check's monolithic app (experiment/live-crosscheck.ts): the same image-only MLLM with
 * `encoderFission: false`, so each LLM executor runs the vision encoder itself (as vLLM with its encoder inside).
 */
import { defineApp } from 'cornserve/sdk';
import { MLLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';

const mllm = new MLLMTask({ modelId: 'cornserve/tiny-vlm-a', modalities: ['image'], encoderFission: false });

export default defineApp({
  name: 'mllm-image-monolithic',
  tasks: { mllm },
  request: chatRequestSchema.omit({ cornserve_embeddings: true }),
  response: chatChunkSchema,
  async serve(request) {
    return mllm.call(request);
  },
});
