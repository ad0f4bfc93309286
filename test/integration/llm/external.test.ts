/** The `external` LLM descriptor: its adapter executor (a real child process) in front of OpenAI-compatible servers. */
import test from 'ava';
import { EXTERNAL_LLM_URLS_ENV, externalLlmDescriptor } from '../../../control/descriptors/llm.js';
import { generate } from '../../../executors/llm/direct.js';
import { LLMTask } from '../../../functions/tasks/llm.js';
import { chatRequestSchema } from '../../../lib/openai.js';
import { freePort } from '../../../lib/net.js';
import { startFakeOpenAI } from '../../helpers/fake-openai.js';
import { launchExecutor, llm, startLlmServer, userPrompt } from '../../helpers/llm.js';

async function invoke(adapterUrl: string, task: LLMTask, input: unknown): Promise<any[]> {
  const r = externalLlmDescriptor.request(task, chatRequestSchema.parse(input), {});
  const res = await fetch(new URL(r.path, adapterUrl), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(r.body) });
  if (!res.ok) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const out = await externalLlmDescriptor.response(task, {}, res);
  const chunks: any[] = [];
  for await (const line of out.stream!) chunks.push(JSON.parse(line));
  return chunks;
}

/** Points the external descriptor at `url` for `modelId` (through the environment, as a deployment would). */
function configure(modelId: string, url: string): void {
  const map = JSON.parse(process.env[EXTERNAL_LLM_URLS_ENV] ?? '{}') as Record<string, string>;
  process.env[EXTERNAL_LLM_URLS_ENV] = JSON.stringify({ ...map, [modelId]: url });
}

const text = (chunks: any[]) => chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');

test('LLMTask through the adapter streams the fake server\'s chunks, with its API key', async (t) => {
  const fake = await startFakeOpenAI({ words: ['one', ' two', ' ✓'], apiKey: 'sekret' });
  t.teardown(() => fake.close());
  const task = new LLMTask({ modelId: 'fake/model', receiveEmbeddings: false }, { descriptor: 'external' });
  configure('fake/model', fake.url);
  process.env.CORNSERVE_EXTERNAL_LLM_API_KEY = 'sekret';
  const spec = externalLlmDescriptor.launch(task);
  delete process.env.CORNSERVE_EXTERNAL_LLM_API_KEY;
  t.false(spec.args.includes('sekret'), 'the key travels in the environment, not in argv');
  const adapter = await launchExecutor(spec);
  t.teardown(() => adapter.stop());
  const chunks = await invoke(adapter.url, task, { model: 'fake/model', messages: [{ role: 'user', content: 'hi' }] });
  t.is(text(chunks), 'one two ✓');
  t.is(chunks.at(-1).choices[0].finish_reason, 'stop');
  t.true(fake.requests[0]!.body.stream);
  t.is(fake.requests[0]!.headers.authorization, 'Bearer sekret');
});

test('LLMTask through the adapter in front of our own LLM executor equals the direct decode loop', async (t) => {
  const model = await llm('tiny-lm-b');
  const upstream = await startLlmServer(model);
  t.teardown(() => upstream.close());
  const task = new LLMTask({ modelId: 'cornserve/tiny-vlm-b', receiveEmbeddings: false }, { descriptor: 'external' });
  configure('cornserve/tiny-vlm-b', upstream.url);
  const adapter = await launchExecutor(externalLlmDescriptor.launch(task));
  t.teardown(() => adapter.stop());
  const chunks = await invoke(adapter.url, task, { model: 'cornserve/tiny-vlm-b', messages: [{ role: 'user', content: 'external' }], max_tokens: 12, temperature: 0 });
  const direct = await generate(model, userPrompt(model, 'external'), { maxTokens: 12, temperature: 0 });
  t.is(text(chunks), direct.text);
});

test('the adapter is unhealthy while its upstream is unreachable', async (t) => {
  configure('m/x', `http://127.0.0.1:${await freePort()}`);
  const adapter = await launchExecutor(externalLlmDescriptor.launch(new LLMTask({ modelId: 'm/x', receiveEmbeddings: false }, { descriptor: 'external' })), {}, false);
  t.teardown(() => adapter.stop());
  const r = await fetch(`${adapter.url}/health`);
  t.is(r.status, 503);
});
