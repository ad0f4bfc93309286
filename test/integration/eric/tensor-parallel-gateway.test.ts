/**
 * Tensor parallelism through the platform: an app whose image encoder asks for `encoderTensorParallel: 2` gets an
 * Eric executor holding two colocated devices (two workers, shard graphs, shared-memory all-reduce), and its chat
 * answers through the gateway equal those of the same app on a single-device encoder.
 */
import test from 'ava';
import { startAppPlatform, type AppPlatform } from '../../helpers/app-platform.js';
import { dataUrl } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';

const app = (name: string, tp?: number) => `
import { defineApp } from 'cornserve/sdk';
import { MLLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';
const mllm = new MLLMTask({ modelId: 'cornserve/tiny-vlm-a', modalities: ['image']${tp ? `, encoderTensorParallel: ${tp}` : ''} });
export default defineApp({
  name: '${name}', tasks: { mllm }, request: chatRequestSchema.omit({ cornserve_embeddings: true }), response: chatChunkSchema,
  async serve(request) { return mllm.call(request); },
});
`;

let ap: AppPlatform;

test.before(async () => {
  ap = await startAppPlatform([], 4); // LLM 1 + encoder 1 + encoder TP-2 2
  await ap.p.register(app('single'));
  await ap.p.register(app('tp2', 2));
});
test.after.always(async () => {
  await ap?.stop();
});

async function answer(model: string, image: string): Promise<string> {
  const res = await ap.client.chat.completions.create({
    model, max_tokens: 12, temperature: 0,
    messages: [{ role: 'user', content: [{ type: 'text', text: 'Describe' }, { type: 'image_url', image_url: { url: image } }] }],
  });
  return res.choices[0]!.message.content ?? '';
}

test.serial('the TP-2 encoder runs as one executor on two colocated devices with two workers', async (t) => {
  const routes = (await ap.p.store.listExecutors()).filter((r) => r.executorId.startsWith('eric-'));
  const tp = routes.filter((r) => r.devices.length === 2);
  t.is(tp.length, 1, JSON.stringify(routes.map((r) => [r.executorId, r.devices.length])));
  t.is(new Set(tp[0]!.devices.map((d) => d.node)).size, 1);
  t.like(await (await fetch(`${tp[0]!.url}/info`)).json(), { tpSize: 2 });
});

test.serial('GET /tasks/list shows where each executor computes (its /health execution)', async (t) => {
  const tasks = (await (await fetch(`${ap.p.gatewayUrl}/tasks/list`)).json()) as Array<{ name: string; executors: Array<{ execution: unknown }> }>;
  const tp = tasks.find((x) => x.name === 'encoder-image-tiny-vlm-a-tp2');
  t.deepEqual(tp?.executors.map((e) => e.execution), [{ provider: 'cpu', device: 'cpu', cpuFallback: false }]);
});

test.serial('answers through the gateway with the TP-2 encoder equal the single-device encoder\'s', async (t) => {
  for (const [w, h, seed] of [[56, 56, 1], [120, 80, 2], [224, 224, 3]] as const) {
    const image = dataUrl('image/png', await makeImage(w, h, { seed }));
    const single = await answer('single', image);
    t.true(single.length > 0);
    t.is(await answer('tp2', image), single, `image ${w}x${h}`);
  }
});
