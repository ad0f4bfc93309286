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
import { defineApp } from '../sdk/index.js';
import { MLLMTask } from '../tasks/mllm.js';
import { chatRequestSchema, modelBasename, type ChatChunk } from '../tasks/openai.js';

const MODEL_IDS = ['cornserve/tiny-vlm-a', 'cornserve/tiny-vlm-b'];
const contestants = MODEL_IDS.map((modelId) => new MLLMTask({ modelId, modalities: ['image'], encoderModelIds: MODEL_IDS }));

/** Text deltas of several chat streams, tagged by name, in arrival order. Leaving early closes every stream. */
async function* mergeDeltas(streams: Array<[string, AsyncIterable<ChatChunk>]>): AsyncGenerator<Record<string, string>> {
  const its = streams.map(([name, s]) => ({ name, it: s[Symbol.asyncIterator]() }));
  const next = (i: number) => its[i]!.it.next().then((r) => ({ i, r }));
  const pending = new Map(its.map((_, i) => [i, next(i)]));
  try {
    while (pending.size) {
      const { i, r } = await Promise.race(pending.values());
      if (r.done) {
        pending.delete(i);
        continue;
      }
      pending.set(i, next(i));
      const delta = r.value.choices[0]?.delta.content;
      if (delta) yield { [its[i]!.name]: delta };
    }
  } finally {
    await Promise.allSettled([...pending.keys()].map((i) => its[i]!.it.return?.()));
  }
}

export default defineApp({
  name: 'arena',
  tasks: Object.fromEntries(contestants.map((t, i) => [`llm${i}`, t])),
  request: chatRequestSchema.omit({ cornserve_embeddings: true }),
  response: z.record(z.string(), z.string()),
  async serve(request) {
    const streams = await Promise.all(contestants.map((t) => t.call({ ...request, model: t.options.modelId })));
    return mergeDeltas(streams.map((s, i) => [modelBasename(MODEL_IDS[i]!), s]));
  },
});
