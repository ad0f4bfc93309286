/**
 * Encoder fission on a Hugging Face split VLM, end to end: `cornserve up --models DIR` over a copy of tiny-qwen2-vl
 * (vision_encoder + embed_tokens + decoder_model_merged) under a name no built-in model has, an mllm-style app
 * whose MLLMTask `modelId` names that folder, and a chat with an image through the official `openai` client. Eric
 * runs the vision_encoder and forwards the features through the sidecar; the LLM executor expands <|image_pad|>
 * and splices them. The answer must be the plain onnxruntime loop's greedy tokens (test/helpers/hf-reference.ts).
 */
import { join } from 'node:path';
import test from 'ava';
import OpenAI from 'openai';
import { HfTokenizer } from '../../../executors/llm/hf-tokenizer.js';
import { encoderManifest } from '../../../executors/models/hf-encoder.js';
import { preprocessImage } from '../../../executors/models/preprocess/image.js';
import { dataUrl } from '../../helpers/eric.js';
import { referenceVlm } from '../../helpers/hf-reference.js';
import { llmDir } from '../../helpers/llm.js';
import { makeImage } from '../../helpers/media.js';
import { type UpWithModels, startUpWithModels } from '../../helpers/up-process.js';

const APP = `
import { defineApp } from 'cornserve/sdk';
import { MLLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';
const mllm = new MLLMTask({ modelId: 'my-vlm', modalities: ['image'] });
export default defineApp({
  name: 'vlm-chat', tasks: { mllm },
  request: chatRequestSchema.omit({ cornserve_embeddings: true }), response: chatChunkSchema,
  async serve(request) { return mllm.call(request); },
});`;

let up: UpWithModels | undefined;
test.after.always(async () => up?.cleanup());

test('an mllm app over a Hugging Face split VLM folder (Eric: vision_encoder, LLM: embed_tokens + decoder) answers an image chat with the reference greedy tokens', async (t) => {
  t.timeout(300_000);
  up = await startUpWithModels({ prefix: 'cs-hf-vlm-', app: 'vlm-chat', models: { 'my-vlm': await llmDir('tiny-qwen2-vl') }, apps: { 'vlm-chat.ts': APP } });
  const dir = join(up.models, 'my-vlm');
  const png = await makeImage(120, 80, { seed: 11 });
  const content = [{ type: 'text' as const, text: 'What is in this picture?' }, { type: 'image_url' as const, image_url: { url: dataUrl('image/png', png) } }];
  const client = new OpenAI({ baseURL: `${up.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
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
  t.is(c.choices[0]!.message.content, tok.decode(expected), up.stderr().slice(-2000));
  t.is(c.usage?.completion_tokens, expected.length);
  t.is(c.usage?.prompt_tokens, ids.length);

  t.is(await up.stop(), 0, up.stderr().slice(-3000));
});
