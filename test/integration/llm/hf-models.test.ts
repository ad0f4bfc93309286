/**
 * The "done when" of standard model folders, end to end: `cornserve up --models DIR` over a folder holding a
 * Hugging Face-layout decoder (a copy of tiny-qwen2 under a name no built-in model has), an app whose LLMTask
 * `modelId` names that folder, a chat through the official `openai` client, and the same tokens as a plain
 * onnxruntime greedy loop over the same ONNX file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import OpenAI from 'openai';
import { HfTokenizer } from '../../../executors/llm/hf-tokenizer.js';
import { freePort } from '../../../lib/net.js';
import { waitUntil } from '../../../lib/wait.js';
import { referenceDecoder } from '../../helpers/hf-reference.js';
import { llmDir } from '../../helpers/llm.js';
import { repoRoot } from '../../helpers/repo.js';

const APP = `
import { defineApp } from 'cornserve/sdk';
import { LLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';
const llm = new LLMTask({ modelId: 'my-qwen', receiveEmbeddings: false });
export default defineApp({
  name: 'qwen-chat', tasks: { llm },
  request: chatRequestSchema.omit({ cornserve_embeddings: true }), response: chatChunkSchema,
  async serve(request) { return llm.call(request); },
});`;

let child: ChildProcess | undefined;
let scratch: string | undefined;
test.after.always(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

test('cornserve up --models DIR serves an app whose modelId names a Hugging Face decoder folder there, and the openai client gets the reference greedy tokens', async (t) => {
  t.timeout(300_000);
  scratch = await mkdtemp(join(tmpdir(), 'cs-hf-models-'));
  const models = join(scratch, 'models');
  const apps = join(scratch, 'apps');
  await mkdir(apps, { recursive: true });
  await cp(await llmDir('tiny-qwen2'), join(models, 'my-qwen'), { recursive: true });
  await writeFile(join(apps, 'qwen-chat.ts'), APP);

  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, CORNSERVE_LOG_LEVEL: 'warn', CORNSERVE_ADMIN_TOKEN: 'hf-models-test' };
  delete env.CORNSERVE_MODELS;
  child = spawn(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', 'up', '--port', String(port), '--devices', '2', '--models', models, '--apps', apps], { cwd: repoRoot, env });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await waitUntil('up registered qwen-chat', () => /qwen-chat/.test(stdout) || child!.exitCode !== null, { timeoutMs: 240_000 }).catch((e: Error) => {
    throw new Error(`${e.message}\nstdout: ${stdout}\nstderr: ${stderr.slice(-3000)}`);
  });
  t.is(child.exitCode, null, stderr.slice(-3000));

  const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0 });
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

  const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  t.is(await exited, 0, stderr.slice(-3000));
});
