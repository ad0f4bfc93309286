import test from 'ava';
import { generate } from '../../../executors/llm/direct.js';
import { mediaUrl } from '../../../executors/llm/multimodal.js';
import { newCache } from '../../../executors/llm/direct.js';
import type { Prompt } from '../../../executors/llm/prompt.js';
import { argmax } from '../../../executors/llm/sampling.js';
import { decode, prefill } from '../../../executors/llm/steps.js';
import type { SidecarClient } from '../../../sidecar/client/client.js';
import { tensor, type Tensor } from '../../../sidecar/tensor.js';
import { waitUntil } from '../../../lib/wait.js';
import { randomHex } from '../../../functions/sdk/index.js';
import { startSidecars, type SidecarCluster } from '../../helpers/sidecar.js';
import { llm, postChat, startLlmServer, streamChat, streamText, userPrompt, type RunningLlmServer } from '../../helpers/llm.js';
import type { LlmModel } from '../../../executors/llm/model.js';

// One node: rank 0 plays the encoder, rank 1 is the LLM, rank 2 consumes hidden states.
let cluster: SidecarCluster;
let encoder: SidecarClient;
let consumer: SidecarClient;
let model: LlmModel;
let srv: RunningLlmServer;
const MODEL = 'cornserve/tiny-vlm-a';

test.before(async () => {
  cluster = await startSidecars({ nodes: [[0, 1, 2]] });
  model = await llm('tiny-lm-a');
  encoder = await cluster.client(0);
  consumer = await cluster.client(2);
  const sidecar = await cluster.client(1, { recvDtype: 'f32', memoryHint: model.config.hidden * 4 });
  srv = await startLlmServer(model, { sidecar });
});
test.after.always(async () => {
  await srv?.close();
  await cluster?.stop();
});

const shmEmpty = () => waitUntil('sidecar memory freed', async () => ((await cluster.nodes[0]!.health()).bytesInUse === 0 ? true : undefined), { timeoutMs: 15_000 });

function embedding(rows: number, phase: number): Tensor {
  return tensor('f32', [rows, model.config.hidden], Float32Array.from({ length: rows * model.config.hidden }, (_, i) => Math.sin(i * 0.37 + phase)));
}

test.serial('embeddings received from the sidecar are placed at the placeholder positions (two images)', async (t) => {
  const [a, b] = [embedding(5, 1), embedding(9, 2)];
  const [ida, idb] = [randomHex(), randomHex()];
  await encoder.send(a, ida, [[1]]);
  await encoder.send(b, idb, [[1]]);
  const parts = (u1: string, u2: string) => [
    { type: 'text' as const, text: 'compare' }, { type: 'image_url' as const, image_url: { url: u1 } },
    { type: 'text' as const, text: 'with' }, { type: 'image_url' as const, image_url: { url: u2 } },
  ];
  const r = await postChat(srv.url, {
    model: MODEL, messages: [{ role: 'user', content: parts(mediaUrl('image', ida, 'http://x/1.png'), mediaUrl('image', idb, 'http://x/2.png')) }],
    max_tokens: 16, temperature: 0,
  });
  t.is(r.status, 200, JSON.stringify(r.body));
  const prompt = userPrompt(model, parts('u1', 'u2'), [{ rows: 5, data: a.data as Float32Array }, { rows: 9, data: b.data as Float32Array }]);
  const direct = await generate(model, prompt, { maxTokens: 16, temperature: 0 });
  t.is(r.body.choices[0].message.content, direct.text);
  t.is(r.body.usage.prompt_tokens, prompt.n);
  await shmEmpty();
  t.pass();
});

test.serial('a client that disconnects while its embedding is awaited still frees the sidecar memory', async (t) => {
  const id = randomHex();
  const ac = new AbortController();
  const req = fetch(`${srv.url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, signal: ac.signal,
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: [{ type: 'audio_url', audio_url: { url: mediaUrl('audio', id, 'a.wav') } }] }], stream: true }),
  }).catch(() => undefined);
  await waitUntil('the server waits for the embedding', async () => ((await srv.info()).receiving === 1 ? true : undefined));
  ac.abort();
  await req;
  await encoder.send(embedding(7, 3), id, [[1]]);
  await shmEmpty();
  const idle = await waitUntil('the request is gone', async () => {
    const i = await srv.info();
    return i.running + i.waiting + i.receiving === 0 ? i : undefined;
  });
  t.is(idle.running, 0);
});

test.serial('a client disconnecting mid-stream leaves no sidecar memory and no batch slot behind', async (t) => {
  const id = randomHex();
  await encoder.send(embedding(6, 4), id, [[1]]);
  const s = await streamChat(srv.url, {
    model: MODEL, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: mediaUrl('image', id, 'i.png') } }] }],
    max_tokens: 1000, temperature: 0, ignore_eos: true,
  }, { stopAfter: 3 });
  t.false(s.done);
  await shmEmpty();
  await waitUntil('the slot is freed', async () => ((await srv.info()).running === 0 ? true : undefined));
  t.pass();
});

test.serial('LLMEmbedding sends the prompt hidden states [tokens, hidden] to the destination ranks', async (t) => {
  const id = randomHex();
  const r = await postChat(srv.url, {
    model: MODEL, messages: [{ role: 'user', content: 'speak this' }],
    vllm_xargs: { cornserve_hidden_states_forward_id: id, cornserve_hidden_states_forward_ranks: '[[2]]' },
  });
  t.is(r.status, 200, JSON.stringify(r.body));
  const prompt = userPrompt(model, 'speak this');
  t.deepEqual(r.body.cornserve_hidden_states, { id, shape: [prompt.n, model.config.hidden] });
  const got = (await consumer.recv(id, 0)) as Tensor;
  t.deepEqual(got.shape, [prompt.n, model.config.hidden]);
  const direct = await prefill(model, undefined, [prompt], true);
  t.deepEqual(Float32Array.from(got.data as Float32Array), direct.hidden![0]);
  await consumer.markDone(id, 0);
  await shmEmpty();
});

test.serial('an embedding whose hidden size does not fit the model is a 400 and is freed', async (t) => {
  const id = randomHex();
  await encoder.send(tensor('f32', [4, 100], new Float32Array(400)), id, [[1]]);
  const r = await postChat(srv.url, { model: MODEL, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: mediaUrl('image', id, 'i.png') } }] }] });
  t.is(r.status, 400);
  t.is(r.body.error.code, 'LLM_EMBEDDING_MISMATCH');
  await shmEmpty();
});

test.serial('an encoder that fails its embedding fails the request with 502', async (t) => {
  const id = randomHex();
  const pending = postChat(srv.url, { model: MODEL, messages: [{ role: 'user', content: [{ type: 'video_url', video_url: { url: mediaUrl('video', id, 'v.mp4') } }] }] });
  await waitUntil('the server waits for the embedding', async () => ((await srv.info()).receiving === 1 ? true : undefined));
  await encoder.fail(id, 'encoder crashed', [[1]]);
  const r = await pending;
  t.is(r.status, 502);
  t.is(r.body.error.code, 'LLM_SIDECAR_FAILED');
  t.is(r.body.error.details?.producer_failed, true); // what the dispatcher reads to prefer the producer's own error
});

/** Greedy decode in this process, keeping the final hidden state each token was sampled from. */
async function directTokenStates(prompt: Prompt, maxTokens: number): Promise<{ tokens: number[]; states: Float32Array[] }> {
  const h = model.config.hidden;
  const cache = newCache(model);
  cache.reserve(1, prompt.n + maxTokens + 1, []);
  const first = await prefill(model, cache, [{ embeds: prompt.embeds, n: prompt.n, slot: 0 }], true);
  const tokens = [argmax(first.lastLogits[0]!)];
  const states = [first.hidden![0]!.slice((prompt.n - 1) * h, prompt.n * h)];
  for (let len = prompt.n; tokens.length < maxTokens; len++) {
    const step = await decode(model, cache, [tokens.at(-1)!], [len], true);
    tokens.push(argmax(step.logits[0]!));
    states.push(Float32Array.from(step.hidden![0]!));
  }
  return { tokens, states };
}

test.serial('with the generated flag, each generated token\'s hidden state is streamed to the destination ranks while the text streams', async (t) => {
  const id = randomHex();
  const s = await streamChat(srv.url, {
    model: MODEL, messages: [{ role: 'user', content: 'speak your answer' }], max_tokens: 12, temperature: 0, ignore_eos: true,
    stream_options: { include_usage: true },
    vllm_xargs: { cornserve_hidden_states_forward_id: id, cornserve_hidden_states_forward_ranks: '[[2]]', cornserve_hidden_states_forward_generated: true },
  });
  t.true(s.done);
  const direct = await directTokenStates(userPrompt(model, 'speak your answer'), 12);
  t.is(streamText(s), model.tokenizer.decode(direct.tokens));
  t.is(s.chunks.at(-1)!.usage.completion_tokens, 12);
  const received: Float32Array[] = [];
  for (let i = 0; ; i++) {
    const c = (await consumer.recv(id, i)) as Tensor | null;
    if (c === null) break;
    t.deepEqual(c.shape, [1, model.config.hidden]);
    received.push(Float32Array.from(c.data as Float32Array));
    await consumer.markDone(id, i);
  }
  t.is(received.length, 12, 'one chunk per generated token, then the end of the stream');
  received.forEach((r, i) => t.deepEqual(r, direct.states[i], `token ${i}`));
  await shmEmpty();
});

test.serial('a generated-states request that fails fails its stream for the consumer', async (t) => {
  const id = randomHex();
  const r = await postChat(srv.url, {
    model: MODEL, messages: [{ role: 'user', content: 'x' }], max_tokens: 1_000_000,
    vllm_xargs: { cornserve_hidden_states_forward_id: id, cornserve_hidden_states_forward_ranks: [[2]], cornserve_hidden_states_forward_generated: 'true' },
  });
  t.is(r.status, 400);
  await t.throwsAsync(consumer.recv(id, 0, { timeoutMs: 10_000 }), { message: /context|without an answer|producer/i });
});
