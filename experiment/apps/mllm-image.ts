/**
 * The live cross-check's disaggregated app (experiment/live-crosscheck.ts): an image-only MLLM whose vision
 * encoder runs on Eric executors of its own and sends embeddings to the LLM through the sidecar (the default).
 * The simulator runs this same file, split or (deployment.mode: monolithic) with the encoder inside the LLM.
 */
import { defineApp } from 'cornserve/sdk';
import { MLLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';

const mllm = new MLLMTask({ modelId: 'cornserve/tiny-vlm-a', modalities: ['image'] });

export default defineApp({
  name: 'mllm-image',
  tasks: { mllm },
  request: chatRequestSchema.omit({ cornserve_embeddings: true }),
  response: chatChunkSchema,
  async serve(request) {
    return mllm.call(request);
  },
});
