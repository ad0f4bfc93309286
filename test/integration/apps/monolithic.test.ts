/**
 * `encoderFission: false` with the built-in LLM (the monolithic baseline): an app with two MLLMTasks over the same
 * model, one with fission (Eric per modality → sidecar → LLM) and one without (the LLM executor runs the encoders
 * itself), on one platform with real executors. The same request gives the same tokens both ways (greedy).
 */
import test from 'ava';
import { encodeWav } from '../../../executors/models/preprocess/wav.js';
import { startAppPlatform, type AppPlatform } from '../../helpers/app-platform.js';
import { dataUrl } from '../../helpers/eric.js';
import { makeImage, tone } from '../../helpers/media.js';

const APP = `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { MLLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';
const modalities = ['image', 'audio', 'video'] as const;
const fission = new MLLMTask({ modelId: 'cornserve/tiny-vlm-a', modalities: [...modalities] });
const monolithic = new MLLMTask({ modelId: 'cornserve/tiny-vlm-a', modalities: [...modalities], encoderFission: false });
export default defineApp({
  name: 'fission-or-not', tasks: { fission, monolithic },
  request: chatRequestSchema.omit({ cornserve_embeddings: true }).extend({ fission: z.boolean() }),
  response: chatChunkSchema,
  async serve({ fission: on, ...req }) { return (on ? fission : monolithic).call(req); },
});`;

let ap: AppPlatform;
let parts: unknown[];

test.before(async () => {
  // 3 encoders (fission) + 2 LLMs (one per receiveEmbeddings value)
  ap = await startAppPlatform([], 5);
  await ap.p.register(APP);
  const frames = await Promise.all([1, 2, 3, 4].map((seed) => makeImage(56, 56, { seed, format: 'jpeg' })));
  parts = [
    { type: 'text', text: 'Compare' },
    { type: 'image_url', image_url: { url: dataUrl('image/png', await makeImage(84, 56, { seed: 5 })) } },
    { type: 'text', text: 'with this clip' },
    { type: 'video_url', video_url: { url: `data:video/jpeg;base64,${frames.map((f) => f.toString('base64')).join(',')}` } },
    { type: 'text', text: 'and this sound' },
    { type: 'audio_url', audio_url: { url: dataUrl('audio/wav', encodeWav([tone(440, 0.5, 16_000)], 16_000)) } },
  ];
});
test.after.always(async () => {
  await ap?.stop();
});

async function answer(fission: boolean, content: unknown[]): Promise<{ text: string; usage: Record<string, number> | undefined }> {
  const res = await ap.p.invoke('fission-or-not', {
    fission, model: 'x', max_tokens: 24, temperature: 0, stream_options: { include_usage: true }, messages: [{ role: 'user', content }],
  });
  const body = await res.text();
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${body}`);
  const chunks = body.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);
  return { text: chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join(''), usage: chunks.find((c) => c.usage)?.usage };
}

test.serial('the same image, video and audio request gives the same tokens with and without encoder fission', async (t) => {
  const withFission = await answer(true, parts);
  const monolithic = await answer(false, parts);
  t.true(withFission.text.length > 0);
  t.is(monolithic.text, withFission.text);
  t.deepEqual(monolithic.usage, withFission.usage); // same prompt length: same placeholder counts per part
  const tasks = (await (await fetch(`${ap.p.gatewayUrl}/tasks/list`)).json()) as Array<{ name: string }>;
  t.deepEqual(tasks.filter((x) => x.name.startsWith('encoder-')).length, 3, 'only the fission task deploys encoders');
  await t.notThrowsAsync(ap.idle());
});

test.serial('without fission the media changes the answer (the encoders really run in the LLM executor)', async (t) => {
  const other = parts.map((p) => ((p as { type: string }).type === 'image_url' ? { type: 'image_url', image_url: { url: dataUrl('image/png', Buffer.alloc(0)) } } : p));
  // a corrupt image is the encoder's own input error, answered before any token
  const res = await ap.p.invoke('fission-or-not', { fission: false, model: 'x', max_tokens: 4, messages: [{ role: 'user', content: other }] });
  const body = await res.text();
  t.true(res.status >= 400 && res.status < 500, body);
  t.regex(body, /MODEL_INPUT_CORRUPT|ERIC_URL_INVALID|cannot be decoded/);
  const a = await answer(false, parts.slice(0, 2));
  const b = await answer(false, [parts[0], { type: 'image_url', image_url: { url: dataUrl('image/png', await makeImage(84, 56, { seed: 99 })) } }]);
  t.notDeepEqual(a, b);
});
