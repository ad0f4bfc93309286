/**
 * The arena app: one chat request fanned out to both LLMs (cornserve/tiny-vlm-a and cornserve/tiny-vlm-b) at
 * once; their streams are merged as they arrive into chunks `{"<model name>": "<text delta>"}` (one key per
 * chunk); the stream ends when both have ended. Images are encoded by the shared image encoder (the same
 * unit tasks as the encoder-sharing app, so both apps use one deployment of each).
 *
 *   {"model": "arena", "messages": [{"role": "user", "content": "Tell me a story"}]}
 *   → {"tiny-vlm-a": "Once"} {"tiny-vlm-b": "There"} {"tiny-vlm-a": " upon"} ...
 */
import { z } from 'zod';
import { defineApp, mergeStreams } from '../sdk/index.js';
import { MLLMTask } from '../tasks/mllm.js';
import { chatRequestSchema, modelBasename, type ChatChunk } from '../tasks/index.js';

const MODEL_IDS = ['cornserve/tiny-vlm-a', 'cornserve/tiny-vlm-b'];
const contestants = MODEL_IDS.map((modelId) => new MLLMTask({ modelId, modalities: ['image'], encoderModelIds: MODEL_IDS }));

/** A chat stream's non-empty text deltas, tagged with `name`. */
async function* deltas(name: string, s: AsyncIterable<ChatChunk>): AsyncGenerator<Record<string, string>> {
  for await (const c of s) {
    const delta = c.choices[0]?.delta.content;
    if (delta) yield { [name]: delta };
  }
}

export default defineApp({
  name: 'arena',
  tasks: Object.fromEntries(contestants.map((t, i) => [`llm${i}`, t])),
  request: chatRequestSchema.omit({ cornserve_embeddings: true }),
  response: z.record(z.string(), z.string()),
  async serve(request) {
    const streams = await Promise.all(contestants.map((t) => t.call({ ...request, model: t.options.modelId })));
    return mergeStreams(streams.map((s, i) => deltas(modelBasename(MODEL_IDS[i]!), s))); // in arrival order
  },
});
