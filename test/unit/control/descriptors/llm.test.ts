import test from 'ava';
import { DataForward } from '../../../../functions/sdk/index.js';
import { LLMAnswerStatesTask, LLMEmbeddingTask, LLMTask, LLM_DTYPES } from '../../../../functions/tasks/llm.js';
import { DTYPE_SUFFIX } from '../../../../executors/models/hf-folder.js';
import { chatRequestSchema, type ChatRequest } from '../../../../lib/openai.js';
import { externalLlmDescriptor, externalLlmUrl, llamaCppDescriptor, llmDescriptor, sseData } from '../../../../control/descriptors/llm.js';
import { descriptorFor } from '../../../../control/descriptors/registry.js';
import express from 'express';
import { listen } from '../../../../lib/listen.js';
import { startFakeOpenAI } from '../../../helpers/fake-openai.js';

const MODEL = 'cornserve/tiny-vlm-a';

function request(parts: number): { req: ChatRequest; forwards: DataForward[] } {
  const forwards = Array.from({ length: parts }, () => DataForward.tensor());
  const content = [
    { type: 'text' as const, text: 'look' },
    ...forwards.map((_, i) => (i % 2 ? { type: 'audio_url' as const, audio_url: { url: `https://x/${i}.wav` } } : { type: 'image_url' as const, image_url: { url: `https://x/${i}.png` } })),
  ];
  const req = chatRequestSchema.parse({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: 8, cornserve_embeddings: forwards });
  return { req, forwards };
}

test('LLMTask and LLMEmbeddingTask resolve to the llm descriptor; descriptor "external" to the external one', (t) => {
  t.is(descriptorFor(new LLMTask({ modelId: MODEL })), llmDescriptor);
  t.is(descriptorFor(new LLMEmbeddingTask({ modelId: MODEL })), llmDescriptor);
  t.is(descriptorFor(new LLMTask({ modelId: MODEL }, { descriptor: 'external' })), externalLlmDescriptor);
});

test('multimodal URLs are rewritten with their forward ids and cornserve fields are removed', (t) => {
  const { req, forwards } = request(2);
  const r = llmDescriptor.request(new LLMTask({ modelId: MODEL }), req, {});
  const body = r.body as any;
  t.is(r.path, '/v1/chat/completions');
  t.false('cornserve_embeddings' in body);
  t.is(body.messages[0].content[1].image_url.url, `data:image/uuid;data_id=${forwards[0]!.id};url=https://x/0.png,`);
  t.is(body.messages[0].content[2].audio_url.url, `data:audio/uuid;data_id=${forwards[1]!.id};url=https://x/1.wav,`);
  t.is(body.messages[0].content[0].text, 'look');
});

test('LLMTask asks for a stream', (t) => {
  const { req } = request(0);
  t.true((llmDescriptor.request(new LLMTask({ modelId: MODEL }), req, {}).body as any).stream);
});

test('LLMEmbeddingTask asks for the hidden states to go to the forward\'s destination ranks, not streamed', (t) => {
  const { req } = request(0);
  const out = { embeddings: DataForward.tensor() };
  out.embeddings.dstSidecarRanks = [[3, 4]];
  const body = llmDescriptor.request(new LLMEmbeddingTask({ modelId: MODEL }), req, out).body as any;
  t.false(body.stream);
  t.deepEqual(body.vllm_xargs, { cornserve_hidden_states_forward_id: out.embeddings.id, cornserve_hidden_states_forward_ranks: '[[3,4]]' });
});

test('LLMAnswerStatesTask asks for a generated answer whose tokens\' hidden states stream to the destination ranks', (t) => {
  const { req } = request(0);
  const out = { embeddings: DataForward.tensor() };
  out.embeddings.dstSidecarRanks = [[5]];
  const body = llmDescriptor.request(new LLMAnswerStatesTask({ modelId: MODEL }), { ...req, max_tokens: 9, seed: 3 }, out).body as any;
  t.true(body.stream);
  t.like(body, { max_tokens: 9, seed: 3 });
  t.deepEqual(body.vllm_xargs, {
    cornserve_hidden_states_forward_id: out.embeddings.id, cornserve_hidden_states_forward_ranks: '[[5]]', cornserve_hidden_states_forward_generated: 'true',
  });
});

test('LLMAnswerStatesTask\'s invocation is done as soon as the executor answers, while its reply still streams', async (t) => {
  // an executor that has answered and keeps generating (its SSE never ends within the test)
  const app = express();
  app.post('/v1/chat/completions', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n');
  });
  const srv = await listen(app, 0);
  t.teardown(() => srv.close(0));
  const res = await fetch(`${srv.url}/v1/chat/completions`, { method: 'POST' });
  const output = { embeddings: DataForward.tensor() };
  const r = await llmDescriptor.response(new LLMAnswerStatesTask({ modelId: MODEL }), output, res);
  t.is(r.output, output);
  t.is(r.stream, undefined);
});

test('more multimodal parts than embeddings is refused', (t) => {
  const { req } = request(2);
  const e = t.throws(() => llmDescriptor.request(new LLMTask({ modelId: MODEL }), { ...req, cornserve_embeddings: req.cornserve_embeddings.slice(1) }, {}));
  t.regex(e!.message, /2 multimodal parts but 1 embeddings/);
});

test('without receiveEmbeddings the URLs stay as they are and the executor is told so', (t) => {
  const task = new LLMTask({ modelId: MODEL, receiveEmbeddings: false });
  const { req } = request(1);
  t.is((llmDescriptor.request(task, { ...req, cornserve_embeddings: [] }, {}).body as any).messages[0].content[1].image_url.url, 'https://x/0.png');
  t.true(llmDescriptor.launch(task).args.includes('--no-receive-embeddings'));
});

test('without receiveEmbeddings the executor is launched with its own encoders and refuses forwarded embeddings', (t) => {
  const task = new LLMTask({ modelId: MODEL, receiveEmbeddings: false });
  t.true(llmDescriptor.launch(task).args.includes('--encoders'));
  const { req } = request(1);
  t.throws(() => llmDescriptor.request(task, { ...req, cornserve_embeddings: [DataForward.tensor()] }, {}), { message: /encodes media itself/ });
});

test('the SSE reply becomes chunk lines: comments and event lines skipped, nothing after [DONE]', async (t) => {
  const fake = await startFakeOpenAI({ words: ['a', 'b'] });
  t.teardown(() => fake.close());
  const res = await fetch(`${fake.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ stream: true }) });
  const r = await llmDescriptor.response(new LLMTask({ modelId: MODEL }), {}, res);
  const lines: any[] = [];
  for await (const l of r.stream!) lines.push(JSON.parse(l));
  t.deepEqual(lines.map((c) => c.choices[0].delta.content ?? null), ['', 'a', 'b', null]);
  t.is(lines.at(-1).choices[0].finish_reason, 'stop');
});

test('an error event in the SSE stream fails the stream', async (t) => {
  async function* body() {
    yield new TextEncoder().encode('data: {"choices":[]}\n\ndata: {"error":{"message":"boom"}}\n\n');
  }
  const it = sseData(body());
  t.is((await it.next()).value, '{"choices":[]}');
  await t.throwsAsync(it.next(), { message: /boom/ });
});

test('the external URL comes from the per-model map, else the single URL', (t) => {
  const env = { CORNSERVE_EXTERNAL_LLM_URLS: JSON.stringify({ [MODEL]: 'http://a:1' }), CORNSERVE_EXTERNAL_LLM_URL: 'http://b:2' };
  t.is(externalLlmUrl(MODEL, env), 'http://a:1');
  t.is(externalLlmUrl('other/model', env), 'http://b:2');
  t.throws(() => externalLlmUrl(MODEL, {}), { message: /CORNSERVE_EXTERNAL_LLM_URL/ });
});

test('the external descriptor serves LLMTask only and refuses embeddings from encoders', (t) => {
  const { req } = request(1);
  t.throws(() => externalLlmDescriptor.request(new LLMEmbeddingTask({ modelId: MODEL }), req, { embeddings: DataForward.tensor() }), { message: /LLMTask only/ });
  t.throws(() => externalLlmDescriptor.request(new LLMTask({ modelId: MODEL }), req, {}), { message: /encoderFission: false/ });
  const plain = externalLlmDescriptor.request(new LLMTask({ modelId: MODEL }), { ...req, cornserve_embeddings: [] }, {}).body as any;
  t.is(plain.messages[0].content[1].image_url.url, 'https://x/0.png');
  t.true(plain.stream);
});

test('the request names the task\'s model id whatever the client named', (t) => {
  const { req } = request(0);
  t.is((llmDescriptor.request(new LLMTask({ modelId: MODEL }), { ...req, model: 'my-mllm-app' }, {}).body as any).model, MODEL);
});

test('LLMTask tensorParallel asks for that many colocated devices and --tp-size, under its own name', (t) => {
  const tp = new LLMTask({ modelId: MODEL, tensorParallel: 2 });
  const spec = llmDescriptor.launch(tp);
  t.is(spec.devicesPerExecutor, 2);
  t.deepEqual(spec.args.slice(-2), ['--tp-size', '2']);
  t.is(llmDescriptor.executorName(tp), 'llm-tiny-vlm-a-tp2');
  t.is(tp.name, 'llm-tiny-vlm-a-tp2');
  t.is(llmDescriptor.launch(new LLMTask({ modelId: MODEL })).devicesPerExecutor, 1);
});

test('LLMTask dtype launches the executor with --dtype under its own name; the dtypes are the loader\'s', (t) => {
  const fp16 = new LLMTask({ modelId: 'tiny-qwen2', dtype: 'fp16' });
  t.deepEqual(llmDescriptor.launch(fp16).args.slice(-2), ['--dtype', 'fp16']);
  t.is(llmDescriptor.executorName(fp16), 'llm-tiny-qwen2-fp16');
  t.is(fp16.name, 'llm-tiny-qwen2-fp16');
  t.false(llmDescriptor.launch(new LLMTask({ modelId: 'tiny-qwen2' })).args.includes('--dtype'));
  t.throws(() => new LLMTask({ modelId: 'tiny-qwen2', dtype: 'fp8' as never }));
  t.deepEqual([...LLM_DTYPES], Object.keys(DTYPE_SUFFIX));
});

test('descriptor "llama-cpp" launches the GGUF executor on the model id, with the task\'s memory as --memory-mb', (t) => {
  const task = new LLMTask({ modelId: 'models/qwen.Q4_K_M.gguf', memoryMiB: 4096 }, { descriptor: 'llama-cpp' });
  t.is(descriptorFor(task), llamaCppDescriptor);
  const spec = llamaCppDescriptor.launch(task);
  t.is(spec.entry, 'executors/llm/gguf/main.ts');
  t.deepEqual(spec.args, ['--model-id', 'models/qwen.Q4_K_M.gguf', '--memory-mb', '4096']);
  t.is(llamaCppDescriptor.executorName(task), 'llm-gguf-qwen-q4-k-m');
});

test('descriptor "llama-cpp" refuses embeddings from encoders and hidden-state tasks (llama.cpp here takes token ids only)', (t) => {
  const { req } = request(1);
  const err = t.throws(() => llamaCppDescriptor.request(new LLMTask({ modelId: 'a.gguf' }, { descriptor: 'llama-cpp' }), req, {}));
  t.is((err as { code?: string }).code, 'LLM_DESCRIPTOR_INVALID_INPUT');
  const plain = chatRequestSchema.parse({ model: 'a.gguf', messages: [{ role: 'user', content: 'hi' }] });
  t.throws(() => llamaCppDescriptor.request(new LLMEmbeddingTask({ modelId: 'a.gguf' }, { descriptor: 'llama-cpp' }), plain, {}), { message: /serves LLMTask only/ });
  t.deepEqual(llamaCppDescriptor.request(new LLMTask({ modelId: 'a.gguf' }, { descriptor: 'llama-cpp' }), plain, {}).body, { model: 'a.gguf', messages: [{ role: 'user', content: 'hi' }], stream: true });
});
