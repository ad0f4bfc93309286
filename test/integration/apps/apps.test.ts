/**
 * The encoder-sharing, arena and any-to-any example apps on one platform (they share the image encoder and the
 * LLM deployments): registered from functions/apps, invoked through the gateway (POST /app/invoke and the
 * OpenAI route), real Eric, LLM and Geri executors, one sidecar.
 */
import test from 'ava';
import type OpenAI from 'openai';
import { startAppPlatform, type AppPlatform } from '../../helpers/app-platform.js';
import { dataUrl } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';

let ap: AppPlatform;
let image: string;

test.before(async () => {
  ap = await startAppPlatform(['encoder-sharing', 'arena', 'any-to-any'], 4);
  image = dataUrl('image/png', await makeImage(56, 56, { seed: 3 }));
});
test.after.always(async () => {
  await ap?.stop();
});

const chat = (text: string, extra: Record<string, unknown> = {}) => ({
  model: 'x', max_tokens: 8, temperature: 0, ...extra,
  messages: [{ role: 'user', content: [{ type: 'text', text }, { type: 'image_url', image_url: { url: image } }] }],
});

/** POST /app/invoke and the NDJSON lines of its streamed reply. */
async function invokeLines(app: string, requestData: unknown): Promise<Array<Record<string, any>>> {
  const res = await ap.p.invoke(app, requestData);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${text}`);
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);
}
const textOf = (chunks: Array<Record<string, any>>) => chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');

test.serial('encoder sharing deploys one image encoder for the two LLMs', async (t) => {
  const tasks = (await (await fetch(`${ap.p.gatewayUrl}/tasks/list`)).json()) as Array<{ name: string }>;
  t.deepEqual(tasks.filter((x) => x.name.startsWith('encoder-')).map((x) => x.name), ['encoder-image-tiny-vlm-a']);
  t.deepEqual(tasks.filter((x) => x.name.startsWith('llm-')).map((x) => x.name).sort(), ['llm-tiny-vlm-a', 'llm-tiny-vlm-b']);
});

test.serial('encoder-sharing routes by model id to each LLM', async (t) => {
  for (const model of ['cornserve/tiny-vlm-a', 'cornserve/tiny-vlm-b']) {
    const chunks = await invokeLines('encoder-sharing', { ...chat('Look'), model });
    t.is(chunks[0]!.model, model);
    t.true(textOf(chunks).length > 0);
  }
  await t.notThrowsAsync(ap.idle());
});

test.serial('encoder-sharing rejects an unsupported model id naming the supported ones', async (t) => {
  const res = await ap.p.invoke('encoder-sharing', chat('Look', { model: 'cornserve/tiny-vlm-z', llm: 'cornserve/tiny-vlm-z' }));
  t.is(res.status, 422);
  t.regex(await res.text(), /cornserve\/tiny-vlm-z is not served by encoder-sharing \(supported: cornserve\/tiny-vlm-a, cornserve\/tiny-vlm-b\)/);
});

test.serial('arena merges both models\' streams; each model\'s text equals its answer alone', async (t) => {
  const merged = await invokeLines('arena', chat('Race'));
  const byModel: Record<string, string> = {};
  for (const c of merged) {
    t.is(Object.keys(c).length, 1);
    for (const [k, v] of Object.entries(c)) byModel[k] = (byModel[k] ?? '') + String(v);
  }
  t.deepEqual(Object.keys(byModel).sort(), ['tiny-vlm-a', 'tiny-vlm-b']);
  for (const model of ['cornserve/tiny-vlm-a', 'cornserve/tiny-vlm-b'])
    t.is(byModel[model.split('/')[1]!], textOf(await invokeLines('encoder-sharing', { ...chat('Race'), model })));
  await t.notThrowsAsync(ap.idle());
});

test.serial('any-to-any answers text through the openai client', async (t) => {
  let text = '';
  let audio = 0;
  for await (const c of await ap.client.chat.completions.create({ ...chat('Say it'), model: 'any-to-any', stream: true } as OpenAI.ChatCompletionCreateParamsStreaming)) {
    text += c.choices[0]?.delta.content ?? '';
    if ((c.choices[0]?.delta as { audio?: unknown } | undefined)?.audio) audio++;
  }
  t.true(text.length > 0);
  t.is(audio, 0);
});

const audioOf = (chunks: Array<Record<string, any>>) =>
  chunks.flatMap((c) => (c.choices?.[0]?.delta?.audio?.data ? [Buffer.from(c.choices[0].delta.audio.data as string, 'base64')] : []));

test.serial('any-to-any speaks the generated answer: an audio chunk per 4 generated tokens, and the text is the text-only answer', async (t) => {
  const ask = (max_tokens: number, text = 'Say it') =>
    invokeLines('any-to-any', { ...chat(text), max_tokens, ignore_eos: true, seed: 7, stream_options: { include_usage: true }, return_audio: true });
  const short = await ask(8);
  const long = await ask(12);
  for (const [chunks, tokens] of [[short, 8], [long, 12]] as const) {
    t.is(chunks.find((c) => c.usage)?.usage.completion_tokens, tokens);
    const audio = audioOf(chunks);
    t.is(audio.length, tokens / 4, 'one audio chunk per 4 generated tokens');
    t.is(Buffer.concat(audio).length, tokens * 240 * 2, '240 PCM16 samples per generated token');
  }
  // the first 8 tokens are the same answer, so the longer answer's speech starts with the shorter one's
  t.true(Buffer.concat(audioOf(long)).subarray(0, 8 * 480).equals(Buffer.concat(audioOf(short))));
  const other = await ask(8, 'Something else entirely');
  t.notDeepEqual(textOf(other), textOf(short));
  t.false(Buffer.concat(audioOf(other)).equals(Buffer.concat(audioOf(short))), 'another answer, other speech');
  const textOnly = await invokeLines('any-to-any', { ...chat('Say it'), max_tokens: 8, ignore_eos: true, seed: 7, return_audio: false });
  t.is(textOf(short), textOf(textOnly));
  t.is(audioOf(textOnly).length, 0);
  await t.notThrowsAsync(ap.idle());
});
