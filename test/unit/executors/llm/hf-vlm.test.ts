/**
 * A Hugging Face split VLM (tiny-qwen2-vl: Qwen2-VL-style vision_encoder + embed_tokens + decoder_model_merged):
 * the chat template's `<|image_pad|>` expanded to one token per image feature, the features spliced at those
 * positions, and greedy decoding through the executor's steps and KV cache, checked against a plain onnxruntime
 * loop (vision_encoder → embed_tokens → splice → decoder, full recompute; test/helpers/hf-reference.ts).
 */
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { ChatMessage } from '../../../../lib/openai.js';
import { generate } from '../../../../executors/llm/direct.js';
import { LlmModel } from '../../../../executors/llm/model.js';
import { GraphBuilder } from '../../../../executors/models/onnx/graph-builder.js';
import { HfTokenizer } from '../../../../executors/llm/hf-tokenizer.js';
import { InProcessEncoders } from '../../../../executors/llm/encoders.js';
import { encoderManifest } from '../../../../executors/models/hf-encoder.js';
import { loadModel } from '../../../../executors/models/loader.js';
import { preprocessImage } from '../../../../executors/models/preprocess/image.js';
import { encodeImage } from '../../../../executors/models/run.js';
import { referenceVlm } from '../../../helpers/hf-reference.js';
import { dataUrl, maxAbsDiff } from '../../../helpers/eric.js';
import { llm, llmDir, postChat, startLlmServer, userPrompt } from '../../../helpers/llm.js';
import { makeImage } from '../../../helpers/media.js';

const VLM = 'tiny-qwen2-vl';
const PAD = '<|image_pad|>';

const imagePart = (url: string) => ({ type: 'image_url' as const, image_url: { url } });

/** The prompt ids the Qwen2-VL processor makes: the rendered template with each `<|image_pad|>` repeated per feature row. */
function expandedIds(tok: HfTokenizer, messages: ChatMessage[], rows: number[]): number[] {
  let i = 0;
  return tok.encode(tok.renderText(messages).replaceAll(PAD, () => PAD.repeat(rows[i++]!)));
}

test('tiny-qwen2-vl loads as an HF decoder over inputs_embeds that takes image embeddings at <|image_pad|>', async (t) => {
  const m = await llm(VLM);
  const tok = m.tokenizer as HfTokenizer;
  t.false(m.takesIds);
  t.deepEqual(m.modalities, ['image']);
  t.is(tok.placeholders.image?.token, PAD);
});

test('the Qwen2-VL chat template writes <|vision_start|><|image_pad|><|vision_end|> where the image part is', async (t) => {
  const tok = (await llm(VLM)).tokenizer as HfTokenizer;
  const text = tok.renderText([{ role: 'user', content: [{ type: 'text', text: 'What is' }, imagePart('data:,x'), { type: 'text', text: ' this?' }] }]);
  t.is(text, '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is<|vision_start|><|image_pad|><|vision_end|> this?<|im_end|>\n<|im_start|>assistant\n');
});

test('prompt expansion: each <|image_pad|> becomes one token per feature row of its image, with those rows as its embeddings', async (t) => {
  const m = await llm(VLM);
  const tok = m.tokenizer as HfTokenizer;
  const h = m.config.hidden;
  const rows = [3, 5];
  const media = rows.map((r, k) => ({ rows: r, data: Float32Array.from({ length: r * h }, (_, i) => k * 1000 + i) }));
  const content = [imagePart('data:,a'), { type: 'text' as const, text: 'and' }, imagePart('data:,b'), { type: 'text' as const, text: 'compare' }];
  const p = userPrompt(m, content, media);
  t.deepEqual(p.ids, expandedIds(tok, [{ role: 'user', content }], rows));
  const pad = tok.placeholders.image!.id;
  const padAt = p.ids.flatMap((id, i) => (id === pad ? [i] : []));
  t.is(padAt.length, 8);
  t.deepEqual(p.media.map((s) => [s.start, s.rows]), [[padAt[0], 3], [padAt[3], 5]]);
  t.deepEqual([...p.embeds.subarray(padAt[0]! * h, (padAt[0]! + 3) * h)], [...media[0]!.data]);
  t.deepEqual([...p.embeds.subarray(padAt[3]! * h, (padAt[3]! + 5) * h)], [...media[1]!.data]);
  const other = p.ids.findIndex((id) => id !== pad);
  const row = new Float32Array(h);
  m.embedToken(p.ids[other]!, row, 0);
  t.deepEqual([...p.embeds.subarray(other * h, (other + 1) * h)], [...row]);
});

test('tiny-qwen2-vl refuses an audio part naming what it takes', async (t) => {
  const m = await llm(VLM);
  const e = t.throws(() => userPrompt(m, [{ type: 'audio_url', audio_url: { url: 'data:,x' } }]));
  t.regex(e!.message, /takes text and image \(audio_url given\)/);
});

test('tiny-qwen2-vl: the encoder path Eric runs gives the direct vision_encoder features, and greedy decoding over them equals the full-recompute loop token for token', async (t) => {
  const dir = await llmDir(VLM);
  const m = await llm(VLM);
  const tok = m.tokenizer as HfTokenizer;
  const ref = await referenceVlm(dir);
  const encoder = await loadModel(dir, { modelIds: [VLM], sessionOptions: { intraOpNumThreads: 1 }, manifest: await encoderManifest(dir, [VLM]) });
  t.teardown(async () => { await ref.close(); await encoder.close(); });
  for (const [w, hgt, q] of [[100, 60, 'What is this?'], [64, 200, 'Describe the picture']] as const) {
    const png = await makeImage(w, hgt, { seed: w });
    const served = await encodeImage(encoder, png, VLM);
    const direct = await ref.features(await preprocessImage(png, encoder.manifest.preprocessing.image!));
    t.deepEqual(served.shape, direct.shape);
    t.true(maxAbsDiff(served.data, direct.data) <= 1e-4);
    const content = [{ type: 'text' as const, text: q }, imagePart('data:,img')];
    const p = userPrompt(m, content, [{ rows: served.shape[0], data: served.data }]);
    t.deepEqual(p.ids, expandedIds(tok, [{ role: 'user', content }], [served.shape[0]]));
    const g = await generate(m, p, { maxTokens: 20, temperature: 0 });
    t.deepEqual(g.tokens, await ref.greedy(p.ids, direct.data, 20, tok.eos), `${w}x${hgt}`);
  }
});

test('tiny-qwen2-vl: a chat completion with an image (encoders in the executor) is the reference greedy continuation, decoded', async (t) => {
  const dir = await llmDir(VLM);
  const m = await llm(VLM);
  const tok = m.tokenizer as HfTokenizer;
  const ref = await referenceVlm(dir);
  const encoders = await InProcessEncoders.load(dir, ['image']); // the model id naming the folder by path
  const s = await startLlmServer(m, { encoders });
  t.teardown(async () => { await s.close(); await encoders.close(); await ref.close(); });
  const png = await makeImage(90, 90, { seed: 3 });
  const content = [{ type: 'text' as const, text: 'What is in' }, imagePart(dataUrl('image/png', png))];
  const res = await postChat(s.url, { model: VLM, messages: [{ role: 'user', content }], max_tokens: 16, temperature: 0 });
  t.is(res.status, 200, JSON.stringify(res.body));
  const features = await ref.features(await preprocessImage(png, (await encoderManifest(dir, [VLM])).preprocessing.image!));
  const expected = await ref.greedy(expandedIds(tok, [{ role: 'user', content }], [features.shape[0]!]), features.data, 16, tok.eos);
  t.is(res.body.choices[0].message.content, tok.decode(expected));
  t.is(res.body.usage.completion_tokens, expected.length);
  t.true(expected.length > 4, 'a continuation long enough to compare');
});

test('a split VLM decoder taking M-RoPE 3-D position_ids (real Qwen2-VL exports) is refused at load, naming the cause', async (t) => {
  const scratch = await mkdtemp(join(tmpdir(), 'cs-mrope-'));
  t.teardown(() => rm(scratch, { recursive: true, force: true }));
  await cp(await llmDir(VLM), scratch, { recursive: true });
  // Same names as the real decoder, position_ids [3, batch, seq]; the loader only opens and checks it.
  const g = new GraphBuilder('mrope-decoder');
  const embeds = g.input('inputs_embeds', 'FLOAT', ['batch', 'seq', 64]);
  g.input('attention_mask', 'INT64', ['batch', 'total']);
  g.input('position_ids', 'INT64', [3, 'batch', 'seq']);
  for (let l = 0; l < 2; l++) {
    for (const w of ['key', 'value']) g.output(g.input(`past_key_values.${l}.${w}`, 'FLOAT', ['batch', 2, 'past', 16]), `present.${l}.${w}`, 'FLOAT', ['batch', 2, 'past', 16]);
  }
  g.output(embeds, 'logits', 'FLOAT', ['batch', 'seq', 64]);
  await writeFile(join(scratch, 'onnx/decoder_model_merged.onnx'), g.toBytes());
  const e = await t.throwsAsync(LlmModel.load(scratch));
  t.regex(e!.message, /3-D position_ids \(M-RoPE/);
});
