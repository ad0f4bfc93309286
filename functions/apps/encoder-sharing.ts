/**
 * The encoder-sharing app: two multimodal LLMs of different model ids (cornserve/tiny-vlm-a, hidden 256, and
 * cornserve/tiny-vlm-b, hidden 192) behind ONE image-encoder deployment. Both MLLMTasks declare the same
 * encoderModelIds, so their EncoderTasks are equivalent and deployed once; Eric serves both ids (each id has
 * its own projector). The request is routed by its model id:
 *
 *   POST /app/invoke/encoder-sharing {"request_data": {"model": "cornserve/tiny-vlm-b", "messages": [...]}}
 *
 * Through POST /v1/chat/completions `model` names this app, so the model id goes in `llm` instead
 * (`{"model": "encoder-sharing", "llm": "cornserve/tiny-vlm-b", ...}`; default cornserve/tiny-vlm-a).
 * Any other model id is a 422 naming the supported ones.
 */
import { z } from 'zod';
import { ValidationError, defineApp } from '../sdk/index.js';
import { MLLMTask } from '../tasks/mllm.js';
import { chatChunkSchema, chatRequestSchema } from '../tasks/index.js';

const MODEL_IDS = ['cornserve/tiny-vlm-a', 'cornserve/tiny-vlm-b'];
const llms: Record<string, MLLMTask> = Object.fromEntries(
  MODEL_IDS.map((modelId) => [modelId, new MLLMTask({ modelId, modalities: ['image'], encoderModelIds: MODEL_IDS })]),
);

const request = chatRequestSchema.omit({ cornserve_embeddings: true }).extend({
  // The example `cornserve up` prints names a model this app serves (a made-up one would be refused).
  llm: z.string().meta({ examples: [MODEL_IDS[1]] }).optional(),
});

export default defineApp({
  name: 'encoder-sharing',
  tasks: llms,
  request,
  response: chatChunkSchema,
  async serve({ llm, ...req }) {
    const modelId = llm ?? (MODEL_IDS.includes(req.model) ? req.model : MODEL_IDS[0]!);
    const task = llms[modelId];
    if (!task)
      throw new ValidationError('request_data', [{ path: llm ? 'llm' : 'model', message: `model ${modelId} is not served by encoder-sharing (supported: ${MODEL_IDS.join(', ')})` }]);
    return task.call({ ...req, model: modelId });
  },
});
