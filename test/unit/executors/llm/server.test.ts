import test from 'ava';
import OpenAI from 'openai';
import { generate, type Generation } from '../../../../executors/llm/direct.js';
import type { LlmModel } from '../../../../executors/llm/model.js';
import {
  llm, postChat, samplePrompts, startLlmServer, streamChat, streamText, userPrompt, type RunningLlmServer,
} from '../../../helpers/llm.js';

const MODEL = 'cornserve/tiny-vlm-a';
let model: LlmModel;
let srv: RunningLlmServer;
let maxDecodeBatch = 0;

test.before(async () => {
  model = await llm('tiny-lm-a');
  srv = await startLlmServer(model, { engine: { onStep: (kind, batch) => { if (kind === 'decode') maxDecodeBatch = Math.max(maxDecodeBatch, batch); } } });
});
test.after.always(async () => srv?.close());

const chat = (content: string, extra: Record<string, unknown> = {}) => ({ model: MODEL, messages: [{ role: 'user', content }], ...extra });

test('greedy decoding through the server (streaming) equals the direct decode loop', async (t) => {
  const direct = await generate(model, userPrompt(model, 'hello there'), { maxTokens: 24, temperature: 0 });
  const s = await streamChat(srv.url, chat('hello there', { max_tokens: 24, temperature: 0 }));
  t.is(s.status, 200);
  t.true(s.done);
  t.is(streamText(s), direct.text);
  t.is(s.chunks.at(-1)!.choices[0].finish_reason, 'length');
});

test('greedy decoding through the server (non-streaming) equals the direct decode loop', async (t) => {
  const direct = await generate(model, userPrompt(model, 'non streaming'), { maxTokens: 16, temperature: 0 });
  const r = await postChat(srv.url, chat('non streaming', { max_tokens: 16, temperature: 0 }));
  t.is(r.status, 200);
  t.is(r.body.object, 'chat.completion');
  t.is(r.body.choices[0].message.content, direct.text);
});

test('with 8 concurrent requests each output equals its output alone', async (t) => {
  const prompts = samplePrompts(8);
  const alone: Generation[] = [];
  for (const p of prompts) alone.push(await generate(model, userPrompt(model, p), { maxTokens: 32, temperature: 0 }));
  maxDecodeBatch = 0;
  const served = await Promise.all(prompts.map((p) => streamChat(srv.url, chat(p, { max_tokens: 32, temperature: 0 }))));
  served.forEach((s, i) => t.is(streamText(s), alone[i]!.text, `request ${i}`));
  t.true(maxDecodeBatch > 1, 'the requests were decoded in shared batches');
});

test('seeded sampling through the server equals the direct loop with the same seed', async (t) => {
  const direct = await generate(model, userPrompt(model, 'sample'), { maxTokens: 20, temperature: 0.8, topP: 0.9, seed: 42 });
  const r = await postChat(srv.url, chat('sample', { max_tokens: 20, temperature: 0.8, top_p: 0.9, seed: 42 }));
  t.is(r.body.choices[0].message.content, direct.text);
});

test('max_completion_tokens limits the completion and wins over max_tokens', async (t) => {
  const r = await postChat(srv.url, chat('limit', { max_tokens: 30, max_completion_tokens: 3, temperature: 0 }));
  t.is(r.body.usage.completion_tokens, 3);
  t.is(r.body.choices[0].finish_reason, 'length');
});

test('a stop sequence ends the completion before it with finish_reason stop', async (t) => {
  const full = await postChat(srv.url, chat('stop here', { max_tokens: 40, temperature: 0 }));
  const text: string = full.body.choices[0].message.content;
  const stop = text.slice(12, 14);
  const s = await streamChat(srv.url, chat('stop here', { max_tokens: 40, temperature: 0, stop: [stop] }));
  t.is(streamText(s), text.slice(0, text.indexOf(stop)));
  t.is(s.chunks.at(-1)!.choices[0].finish_reason, 'stop');
});

test('usage counts prompt and completion tokens in the non-streamed reply', async (t) => {
  const r = await postChat(srv.url, chat('count me', { max_tokens: 5, temperature: 0 }));
  t.deepEqual(r.body.usage, { prompt_tokens: userPrompt(model, 'count me').n, completion_tokens: 5, total_tokens: userPrompt(model, 'count me').n + 5 });
});

test('stream_options.include_usage adds a final usage chunk', async (t) => {
  const s = await streamChat(srv.url, chat('usage', { max_tokens: 4, temperature: 0, stream_options: { include_usage: true } }));
  const last = s.chunks.at(-1)!;
  t.deepEqual(last.choices, []);
  t.is(last.usage.completion_tokens, 4);
  t.is(last.usage.prompt_tokens, userPrompt(model, 'usage').n);
  t.true(s.chunks.slice(0, -1).every((c) => c.usage === null));
});

test('every streamed chunk is valid UTF-8 and the chunks add up to the non-streamed text', async (t) => {
  for (const p of samplePrompts(4)) {
    const s = await streamChat(srv.url, chat(p, { max_tokens: 48, temperature: 1.2, seed: 7 }));
    t.notThrows(() => new TextDecoder('utf-8', { fatal: true }).decode(s.bytes));
    for (const c of s.chunks) {
      const content: string = c.choices[0]?.delta?.content ?? '';
      t.is(Buffer.from(content, 'utf8').toString('utf8'), content, 'no lone surrogates');
    }
    const whole = await postChat(srv.url, chat(p, { max_tokens: 48, temperature: 1.2, seed: 7 }));
    t.is(streamText(s), whole.body.choices[0].message.content);
  }
});

test('the official openai client completes a streaming and a non-streaming chat', async (t) => {
  const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: 'unused' });
  const one = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 6, temperature: 0 });
  let streamed = '';
  for await (const c of await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], max_tokens: 6, temperature: 0, stream: true })) {
    streamed += c.choices[0]?.delta?.content ?? '';
  }
  t.is(streamed, one.choices[0]!.message.content ?? '');
});

test('GET /v1/models lists the served model id', async (t) => {
  const r = await (await fetch(`${srv.url}/v1/models`)).json() as { data: { id: string }[] };
  t.deepEqual(r.data.map((m) => m.id), [MODEL]);
});

test('GET /metrics exposes the engine gauges and token counters', async (t) => {
  const text = await srv.metrics();
  for (const name of ['cornserve_llm_running_requests', 'cornserve_llm_generation_tokens_total', 'cornserve_llm_time_to_first_token_seconds']) t.true(text.includes(name), name);
});

const badRequests: [string, unknown, number, string | null][] = [
  ['an empty messages list', { model: MODEL, messages: [] }, 400, 'messages'],
  ['a temperature above 2', { model: MODEL, messages: [{ role: 'user', content: 'x' }], temperature: 3 }, 400, 'temperature'],
  ['n = 2', { model: MODEL, messages: [{ role: 'user', content: 'x' }], n: 2 }, 400, 'n'],
  ['an unknown model', { model: 'nope/none', messages: [{ role: 'user', content: 'x' }] }, 404, 'model'],
  ['a prompt plus max_tokens beyond the context', { model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 5000 }, 400, 'messages'],
  ['a plain image URL (no encoder inside)', { model: MODEL, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] }, 400, 'messages (multimodal part 0)'],
];
for (const [what, body, status, param] of badRequests) {
  test(`${what} is answered ${status} in OpenAI's error shape`, async (t) => {
    const r = await postChat(srv.url, body as Record<string, unknown>);
    t.is(r.status, status);
    t.is(typeof r.body.error.message, 'string');
    t.is(typeof r.body.error.type, 'string');
    t.is(typeof r.body.error.code, 'string');
    t.is(r.body.error.param, param);
  });
}

test('a malformed x-cornserve-deadline header is a 400 naming the header', async (t) => {
  const r = await postChat(srv.url, { model: MODEL, messages: [{ role: 'user', content: 'x' }] }, { 'x-cornserve-deadline': '12.5' });
  t.is(r.status, 400);
  t.like(r.body.error, { code: 'LLM_BAD_REQUEST', param: 'x-cornserve-deadline' });
});

test('a body that is not JSON is a 400 in OpenAI\'s error shape', async (t) => {
  const res = await fetch(`${srv.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{nope' });
  t.is(res.status, 400);
  t.is(((await res.json()) as { error: { type: string } }).error.type, 'invalid_request_error');
});
