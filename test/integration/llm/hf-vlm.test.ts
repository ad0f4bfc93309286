/**
 * Encoder fission on a Hugging Face split VLM, end to end: `cornserve up --models DIR` over a copy of tiny-qwen2-vl
 * (vision_encoder + embed_tokens + decoder_model_merged) under a name no built-in model has, an mllm-style app
 * whose MLLMTask `modelId` names that folder, and a chat with an image through the official `openai` client. Eric
 * runs the vision_encoder and forwards the features through the sidecar; the LLM executor expands <|image_pad|>
 * and splices them. The answer must be the plain onnxruntime loop's greedy tokens (test/helpers/hf-reference.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import OpenAI from 'openai';
import { HfTokenizer } from '../../../executors/llm/hf-tokenizer.js';
import { encoderManifest } from '../../../executors/models/hf-encoder.js';
import { preprocessImage } from '../../../executors/models/preprocess/image.js';
import { freePort } from '../../../lib/net.js';
import { waitUntil } from '../../../lib/wait.js';
import { dataUrl } from '../../helpers/eric.js';
import { referenceVlm } from '../../helpers/hf-reference.js';
import { llmDir } from '../../helpers/llm.js';
import { makeImage } from '../../helpers/media.js';
import { repoRoot } from '../../helpers/repo.js';

const APP = `
import { defineApp } from 'cornserve/sdk';
import { MLLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';
const mllm = new MLLMTask({ modelId: 'my-vlm', modalities: ['image'] });
export default defineApp({
  name: 'vlm-chat', tasks: { mllm },
  request: chatRequestSchema.omit({ cornserve_embeddings: true }), response: chatChunkSchema,
  async serve(request) { return mllm.call(request); },
});`;

let child: ChildProcess | undefined;
let scratch: string | undefined;
test.after.always(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

test('an mllm app over a Hugging Face split VLM folder (Eric: vision_encoder, LLM: embed_tokens + decoder) answers an image chat with the reference greedy tokens', async (t) => {
  t.timeout(300_000);
  scratch = await mkdtemp(join(tmpdir(), 'cs-hf-vlm-'));
  const models = join(scratch, 'models');
  const apps = join(scratch, 'apps');
  await mkdir(apps, { recursive: true });
  await cp(await llmDir('tiny-qwen2-vl'), join(models, 'my-vlm'), { recursive: true });
  await writeFile(join(apps, 'vlm-chat.ts'), APP);

  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, CORNSERVE_LOG_LEVEL: 'warn', CORNSERVE_ADMIN_TOKEN: 'hf-vlm-test' };
  delete env.CORNSERVE_MODELS;
  child = spawn(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', 'up', '--port', String(port), '--devices', '2', '--models', models, '--apps', apps], { cwd: repoRoot, env });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await waitUntil('up registered vlm-chat', () => /vlm-chat/.test(stdout) || child!.exitCode !== null, { timeoutMs: 240_000 }).catch((e: Error) => {
    throw new Error(`${e.message}\nstdout: ${stdout}\nstderr: ${stderr.slice(-3000)}`);
  });
  t.is(child.exitCode, null, stderr.slice(-3000));

  const dir = join(models, 'my-vlm');
  const png = await makeImage(120, 80, { seed: 11 });
  const content = [{ type: 'text' as const, text: 'What is in this picture?' }, { type: 'image_url' as const, image_url: { url: dataUrl('image/png', png) } }];
  const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
  const c = await client.chat.completions.create({ model: 'vlm-chat', messages: [{ role: 'user', content }], max_tokens: 16, temperature: 0 });

  // The reference: the folder's template with <|image_pad|> repeated per feature row, vision_encoder → splice → decoder.
  const tok = await HfTokenizer.load(dir);
  const ref = await referenceVlm(dir);
  t.teardown(() => ref.close());
  const features = await ref.features(await preprocessImage(png, (await encoderManifest(dir, ['my-vlm'])).preprocessing.image!));
  const pad = '<|image_pad|>';
  const ids = tok.encode(tok.renderText([{ role: 'user', content }]).replace(pad, pad.repeat(features.shape[0]!)));
  const expected = await ref.greedy(ids, features.data, 16, tok.eos);
  t.true(expected.length > 4, 'a continuation long enough to compare');
  t.is(c.choices[0]!.message.content, tok.decode(expected), stderr.slice(-2000));
  t.is(c.usage?.completion_tokens, expected.length);
  t.is(c.usage?.prompt_tokens, ids.length);

  const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  t.is(await exited, 0, stderr.slice(-3000));
});
