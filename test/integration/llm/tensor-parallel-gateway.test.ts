/**
 * Tensor parallelism through the platform for the LLM: an app whose LLM asks for `llmTensorParallel: 2` gets an
 * LLM executor holding two colocated devices (decoder steps over two ranks of tp.* shards), and its chat answers
 * through the gateway equal those of the same app on a single-device LLM.
 */
import test from 'ava';
import { startAppPlatform, type AppPlatform } from '../../helpers/app-platform.js';
import { dataUrl } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';

const app = (name: string, tp?: number) => `
import { defineApp } from 'cornserve/sdk';
import { MLLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';
const mllm = new MLLMTask({ modelId: 'cornserve/tiny-vlm-a', modalities: ['image']${tp ? `, llmTensorParallel: ${tp}` : ''} });
export default defineApp({
  name: '${name}', tasks: { mllm }, request: chatRequestSchema.omit({ cornserve_embeddings: true }), response: chatChunkSchema,
  async serve(request) { return mllm.call(request); },
});
`;

let ap: AppPlatform;

test.before(async () => {
  ap = await startAppPlatform([], 4); // encoder 1 (shared) + LLM 1 + LLM TP-2 2
  await ap.p.register(app('single'));
  await ap.p.register(app('tp2', 2));
});
test.after.always(async () => {
  await ap?.stop();
});

type Content = string | Array<{ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } }>;

async function answer(model: string, content: Content): Promise<string> {
  const res = await ap.client.chat.completions.create({ model, max_tokens: 16, temperature: 0, messages: [{ role: 'user', content }] });
  return res.choices[0]!.message.content ?? '';
}

test.serial('the TP-2 LLM runs as one executor on two colocated devices over two ranks', async (t) => {
  const routes = (await ap.p.store.listExecutors()).filter((r) => r.executorId.startsWith('llm-'));
  const tp = routes.filter((r) => r.devices.length === 2);
  t.is(tp.length, 1, JSON.stringify(routes.map((r) => [r.executorId, r.devices.length])));
  t.is(new Set(tp[0]!.devices.map((d) => d.node)).size, 1);
  t.like(await (await fetch(`${tp[0]!.url}/info`)).json(), { tensorParallel: 2 });
});

test.serial('text answers through the gateway with the TP-2 LLM equal the single-device LLM\'s', async (t) => {
  for (const text of ['hello there', 'the quick brown fox jumps over the lazy dog', 'cornserve 12345']) {
    const single = await answer('single', text);
    t.true(single.length > 0);
    t.is(await answer('tp2', text), single, text);
  }
});

test.serial('image answers through the gateway with the TP-2 LLM equal the single-device LLM\'s', async (t) => {
  const image = dataUrl('image/png', await makeImage(120, 80, { seed: 5 }));
  const content: Content = [{ type: 'text', text: 'Describe' }, { type: 'image_url', image_url: { url: image } }];
  const single = await answer('single', content);
  t.true(single.length > 0);
  t.is(await answer('tp2', content), single);
});
