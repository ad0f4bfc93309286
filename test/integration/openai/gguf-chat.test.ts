/**
 * A GGUF model served end to end: an app whose LLMTask names a `.gguf` file under the platform's model directory
 * (descriptor `llama-cpp`), a chat through the official `openai` client with node-llama-cpp's own greedy tokens,
 * and GGUF files llama.cpp must refuse failing their app's registration with the reason while the platform goes
 * on serving the app it has.
 */
import { rm } from 'node:fs/promises';
import test from 'ava';
import OpenAI from 'openai';
import { ggufReference, ggufScratch, tinyGguf, type GgufReference } from '../../helpers/gguf.js';
import { startPlatform, type TestPlatform } from '../../helpers/platform.js';

const app = (name: string, modelId: string, memoryMiB?: number) => `
import { defineApp } from 'cornserve/sdk';
import { LLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';
const llm = new LLMTask({ modelId: '${modelId}', receiveEmbeddings: false${memoryMiB ? `, memoryMiB: ${memoryMiB}` : ''} }, { descriptor: 'llama-cpp' });
export default defineApp({
  name: '${name}', tasks: { llm },
  request: chatRequestSchema.omit({ cornserve_embeddings: true }), response: chatChunkSchema,
  async serve(request) { return llm.call(request); },
});`;

let p: TestPlatform;
let client: OpenAI;
let ref: GgufReference;
let scratch: string;

test.before(async () => {
  scratch = await ggufScratch();
  ref = await ggufReference(await tinyGguf());
  p = await startPlatform({ devices: 2, childEnv: { CORNSERVE_MODELS: scratch } });
  await p.register(app('gguf-chat', 'chat.gguf'));
  client = new OpenAI({ baseURL: `${p.gatewayUrl}/v1`, apiKey: 'unused', maxRetries: 0 });
});
test.after.always(async () => {
  await p?.stop();
  await ref?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const messages = (text: string) => [{ role: 'user' as const, content: text }];

test.serial('a chat with a GGUF app through the openai client answers node-llama-cpp\'s greedy tokens', async (t) => {
  const expected = await ref.greedy('hello the world', 16);
  const c = await client.chat.completions.create({ model: 'gguf-chat', messages: messages('hello the world'), max_tokens: 16, temperature: 0 });
  t.is(c.choices[0]!.message.content, expected.text);
  t.is(c.usage?.completion_tokens, expected.tokens.length);
  t.is(c.usage?.prompt_tokens, expected.prompt.length);
  t.is(c.choices[0]!.finish_reason, 'length');
});

test.serial('a streamed chat with a GGUF app is the same greedy text, chunk by chunk', async (t) => {
  const expected = await ref.greedy('the cat sat on the mat', 20);
  let text = '';
  let chunks = 0;
  for await (const chunk of await client.chat.completions.create({ model: 'gguf-chat', messages: messages('the cat sat on the mat'), max_tokens: 20, temperature: 0, stream: true })) {
    text += chunk.choices[0]?.delta.content ?? '';
    chunks++;
  }
  t.is(text, expected.text);
  t.true(chunks > 2);
});

/** Registers an app on `modelId`; the registration's error message. */
async function refusedRegistration(name: string, modelId: string, memoryMiB?: number): Promise<string> {
  const events = await p.registerEvents(app(name, modelId, memoryMiB));
  const last = events.at(-1)!;
  if (last.type !== 'error') throw new Error(`registration of ${name} did not fail: ${JSON.stringify(last)}`);
  return last.message;
}

async function stillServes(t: import('ava').ExecutionContext): Promise<void> {
  const expected = await ref.greedy('still there?', 8);
  const c = await client.chat.completions.create({ model: 'gguf-chat', messages: messages('still there?'), max_tokens: 8, temperature: 0 });
  t.is(c.choices[0]!.message.content, expected.text);
}

test.serial('an app on a truncated GGUF fails registration with GGUF_TRUNCATED; the other app still answers', async (t) => {
  t.regex(await refusedRegistration('gguf-truncated', 'truncated.gguf'), /GGUF_TRUNCATED: .*truncated\.gguf is truncated/);
  await stillServes(t);
});

test.serial('an app on a GGUF of an unknown architecture fails registration with GGUF_ARCHITECTURE_UNSUPPORTED; the other app still answers', async (t) => {
  t.regex(await refusedRegistration('gguf-alien', 'alien.gguf'), /GGUF_ARCHITECTURE_UNSUPPORTED: .*'nosucharch'/);
  await stillServes(t);
});

test.serial('an app whose GGUF needs more memory than its task asks for fails registration with GGUF_TOO_LARGE; the other app still answers', async (t) => {
  t.regex(await refusedRegistration('gguf-too-large', 'chat.gguf', 1), /GGUF_TOO_LARGE: .*given 1 MiB/);
  await stillServes(t);
});
