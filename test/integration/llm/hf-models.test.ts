/**
 * The "done when" of standard model folders, end to end: `cornserve up --models DIR` over a folder holding a
 * Hugging Face-layout decoder (a copy of tiny-qwen2 under a name no built-in model has), an app whose LLMTask
 * `modelId` names that folder, a chat through the official `openai` client, and the same tokens as a plain
 * onnxruntime greedy loop over the same ONNX file.
 */
import { join } from 'node:path';
import test from 'ava';
import OpenAI from 'openai';
import { HfTokenizer } from '../../../executors/llm/hf-tokenizer.js';
import { referenceDecoder } from '../../helpers/hf-reference.js';
import { llmDir } from '../../helpers/llm.js';
import { type UpWithModels, startUpWithModels } from '../../helpers/up-process.js';

const APP = `
import { defineApp } from 'cornserve/sdk';
import { LLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';
const llm = new LLMTask({ modelId: 'my-qwen', receiveEmbeddings: false });
export default defineApp({
  name: 'qwen-chat', tasks: { llm },
  request: chatRequestSchema.omit({ cornserve_embeddings: true }), response: chatChunkSchema,
  async serve(request) { return llm.call(request); },
});`;

let up: UpWithModels | undefined;
test.after.always(async () => {
  await up?.cleanup();
});

test('cornserve up --models DIR serves an app whose modelId names a Hugging Face decoder folder there, and the openai client gets the reference greedy tokens', async (t) => {
  t.timeout(300_000);
  up = await startUpWithModels({ prefix: 'cs-hf-models-', app: 'qwen-chat', models: { 'my-qwen': await llmDir('tiny-qwen2') }, apps: { 'qwen-chat.ts': APP } });
  const models = up.models;

  const client = new OpenAI({ baseURL: `${up.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const messages = [{ role: 'user' as const, content: 'Hello there, the cat' }];
  const c = await client.chat.completions.create({ model: 'qwen-chat', messages, max_tokens: 16, temperature: 0 });

  const dir = join(models, 'my-qwen');
  const tok = await HfTokenizer.load(dir);
  const ref = await referenceDecoder(dir);
  t.teardown(() => ref.close());
  const expected = await ref.greedy(tok.encode(tok.renderText(messages)), 16, tok.eos);
  t.is(c.choices[0]!.message.content, tok.decode(expected));
  t.is(c.usage?.completion_tokens, expected.length);

  let streamed = '';
  for await (const chunk of await client.chat.completions.create({ model: 'qwen-chat', messages, max_tokens: 16, temperature: 0, stream: true })) {
    streamed += chunk.choices[0]?.delta.content ?? '';
  }
  t.is(streamed, tok.decode(expected));

  t.is(await up.stop(), 0, up.stderr().slice(-3000));
});
