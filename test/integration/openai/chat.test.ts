/**
 * The gateway's OpenAI-compatible API driven by the official `openai` client, against the mllm example app
 * (Eric encoders → sidecar → LLM executor) and the echo app (not a chat app) on one platform.
 */
import { join } from 'node:path';
import test from 'ava';
import OpenAI from 'openai';
import type { ChatCompletionContentPart } from 'openai/resources/chat/completions';
import { generate } from '../../../executors/llm/direct.js';
import { loadModel } from '../../../executors/models/loader.js';
import { encodeImage } from '../../../executors/models/run.js';
import { startAppPlatform, type AppPlatform } from '../../helpers/app-platform.js';
import { dataUrl, TINY_A } from '../../helpers/eric.js';
import { llm, userPrompt } from '../../helpers/llm.js';
import { makeImage } from '../../helpers/media.js';
import { modelsDir } from '../../helpers/models.js';
import { ECHO_APP } from '../../helpers/platform.js';

let ap: AppPlatform;
let png: Buffer;

test.before(async () => {
  ap = await startAppPlatform(['mllm'], 6);
  await ap.p.register(ECHO_APP);
  png = await makeImage(56, 56, { seed: 1 });
});
test.after.always(async () => {
  await ap?.stop();
});

const withImage = (text: string, ...images: Buffer[]): ChatCompletionContentPart[] => [
  { type: 'text', text },
  ...images.map((b) => ({ type: 'image_url' as const, image_url: { url: dataUrl('image/png', b) } })),
];

test.serial('a streaming chat with an image part completes through the openai client', async (t) => {
  const stream = await ap.client.chat.completions.create({
    model: 'mllm', stream: true, max_tokens: 12, temperature: 0, messages: [{ role: 'user', content: withImage('What is this?', png) }],
  });
  let text = '';
  let finish: string | null | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  t.true(text.length > 0);
  t.true(finish === 'stop' || finish === 'length');
});

test.serial('a non-streaming chat returns one chat.completion with content, finish_reason and usage', async (t) => {
  const c = await ap.client.chat.completions.create({
    model: 'mllm', max_tokens: 12, temperature: 0, messages: [{ role: 'user', content: withImage('Describe it.', png) }],
  });
  t.is(c.object, 'chat.completion');
  t.true((c.choices[0]?.message.content ?? '').length > 0);
  t.true(c.choices[0]?.finish_reason === 'stop' || c.choices[0]?.finish_reason === 'length');
  t.true((c.usage?.completion_tokens ?? 0) > 0);
  t.is(c.usage?.total_tokens, c.usage!.prompt_tokens + c.usage!.completion_tokens);
});

test.serial('streamed and aggregated answers are the same text', async (t) => {
  const messages = [{ role: 'user' as const, content: withImage('Same?', png) }];
  const whole = await ap.client.chat.completions.create({ model: 'mllm', max_tokens: 10, temperature: 0, messages });
  let streamed = '';
  for await (const chunk of await ap.client.chat.completions.create({ model: 'mllm', max_tokens: 10, temperature: 0, messages, stream: true }))
    streamed += chunk.choices[0]?.delta.content ?? '';
  t.is(streamed, whole.choices[0]!.message.content ?? '');
});

test.serial('GET /v1/models lists the chat apps only', async (t) => {
  const ids: string[] = [];
  for await (const m of ap.client.models.list()) {
    ids.push(m.id);
    t.is(m.owned_by, 'cornserve');
  }
  t.deepEqual(ids, ['mllm']);
});

test.serial('an unknown model is the client\'s NotFoundError with code model_not_found', async (t) => {
  const err = await t.throwsAsync(ap.client.chat.completions.create({ model: 'no-such-app', messages: [{ role: 'user', content: 'hi' }] }));
  t.true(err instanceof OpenAI.NotFoundError);
  t.is((err as InstanceType<typeof OpenAI.NotFoundError>).code, 'model_not_found');
});

test.serial('a request the app rejects is a 400 invalid_request_error naming the field', async (t) => {
  const err = await t.throwsAsync(ap.client.chat.completions.create({ model: 'mllm', temperature: 7, messages: [{ role: 'user', content: 'hi' }] }));
  t.true(err instanceof OpenAI.BadRequestError);
  const e = err as InstanceType<typeof OpenAI.BadRequestError>;
  t.is(e.type, 'invalid_request_error');
  t.is(e.param, 'temperature');
});

test.serial('with two images the LLM answers exactly as a direct run on the encoder\'s embeddings does', async (t) => {
  const second = await makeImage(84, 56, { seed: 2 });
  const c = await ap.client.chat.completions.create({
    model: 'mllm', max_tokens: 16, temperature: 0, messages: [{ role: 'user', content: withImage('Compare', png, second) }],
  });
  const vision = await loadModel(join(await modelsDir(), 'tiny-vision'), { modelIds: [TINY_A] });
  const lm = await llm('tiny-lm-a');
  try {
    const embeddings = [await encodeImage(vision, png, TINY_A), await encodeImage(vision, second, TINY_A)];
    const parts = [{ type: 'text' as const, text: 'Compare' }, { type: 'image_url' as const, image_url: { url: 'a' } }, { type: 'image_url' as const, image_url: { url: 'b' } }];
    const prompt = userPrompt(lm, parts, embeddings.map((e) => ({ rows: e.shape[0], data: e.data })));
    const direct = await generate(lm, prompt, { maxTokens: 16, temperature: 0 });
    t.is(c.choices[0]!.message.content, direct.text);
    t.is(c.usage?.prompt_tokens, prompt.n);
  } finally {
    await vision.close();
  }
  await t.notThrowsAsync(ap.idle());
});

test.serial('a corrupt image fails the request cleanly before its deadline; nothing is left held', async (t) => {
  const started = Date.now();
  const err = await t.throwsAsync(ap.client.chat.completions.create(
    { model: 'mllm', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,aGVsbG8=' } }] }] },
    { headers: { 'x-cornserve-deadline': String(started + 60_000) } },
  ));
  t.true(err instanceof OpenAI.APIError);
  t.is((err as InstanceType<typeof OpenAI.APIError>).status, 400); // bad input stays a 4xx end to end (OpenAI says 400)
  t.regex((err as Error).message, /cannot be decoded/);
  t.true(Date.now() < started + 60_000);
  await t.notThrowsAsync(ap.idle());
});

test.serial("a corrupt image is Eric's own code (lower case), names the failed task, and carries no internal address", async (t) => {
  const res = await fetch(`${ap.p.gatewayUrl}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'mllm', stream: true, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,aGVsbG8=' } }] }] }),
  });
  const text = await res.text();
  t.is(res.status, 400);
  const { error } = JSON.parse(text) as { error: { code: string; message: string } };
  t.is(error.code, 'model_input_corrupt');
  t.regex(error.message, /^task encoder-image-\S+ failed: /);
  const executors = await ap.p.store.listExecutors();
  for (const internal of ['127.0.0.1', 'localhost', '.sock', '/tmp/', ...executors.flatMap((e) => [e.executorId, e.url])]) t.false(text.includes(internal), `${internal} in ${text}`);
  await t.notThrowsAsync(ap.idle());
});

/** The LLM executors' count of requests cancelled by their client. */
async function cancelledRequests(): Promise<number> {
  const llms = (await ap.p.store.listExecutors()).filter((r) => r.executorId.startsWith('llm-'));
  let n = 0;
  for (const r of llms) {
    const m = /^cornserve_llm_requests_total\{outcome="cancelled"\} (\d+)/m.exec(await (await fetch(`${r.url}/metrics`)).text());
    n += Number(m?.[1] ?? 0);
  }
  return n;
}

test.serial('a client leaving mid-stream frees its LLM batch slot and its sidecar memory', async (t) => {
  const before = await cancelledRequests();
  const ac = new AbortController();
  const stream = await ap.client.chat.completions.create(
    { model: 'mllm', stream: true, max_tokens: 400, ignore_eos: true, messages: [{ role: 'user', content: withImage('Go on', png) }] } as OpenAI.ChatCompletionCreateParamsStreaming,
    { signal: ac.signal },
  );
  let got = 0;
  for await (const _ of stream) {
    if (++got < 3) continue;
    ac.abort();
    break;
  }
  t.is(got, 3);
  await t.notThrowsAsync(ap.idle());
  t.is(await cancelledRequests(), before + 1);
});

test.serial('a chat whose LLM task is scaled to zero is a 503 with Retry-After, and answers again once scaled up', async (t) => {
  const { taskId } = (await ap.p.store.listExecutors()).find((r) => r.executorId.startsWith('llm-'))!;
  t.is((await ap.p.admin('/task/scale', { task_id: taskId, num_devices: -1 })).status, 200);
  const body = JSON.stringify({ model: 'mllm', max_tokens: 4, messages: [{ role: 'user', content: 'hello' }] });
  const res = await fetch(`${ap.p.gatewayUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  t.is(res.status, 503);
  t.like(await res.json(), { error: { code: 'no_executor' } });
  t.is(res.headers.get('retry-after'), '5');
  t.is((await ap.p.admin('/task/scale', { task_id: taskId, num_devices: 1 })).status, 200);
  const again = await ap.client.chat.completions.create({ model: 'mllm', max_tokens: 4, messages: [{ role: 'user', content: 'hello' }] });
  t.is(again.object, 'chat.completion');
});
