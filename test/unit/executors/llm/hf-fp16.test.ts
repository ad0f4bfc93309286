/**
 * The fp16 variant of a Hugging Face decoder (tiny-qwen2's onnx/model_fp16.onnx: float16 weights and compute,
 * float32 I/O as `convert_float_to_float16(keep_io_types=True)` writes it), selected by the loader's dtype option
 * (`--dtype fp16`). onnxruntime's CPU provider runs it (ops without a CPU fp16 kernel are wrapped in casts to
 * float32 at load time by onnxruntime, so the CPU gains the halved size, not fp16 speed); greedy tokens equal the
 * fp32 file's on the tiny model and the logits stay within 5e-2 of fp32 (measured 5e-3: half-precision weights).
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import ort from 'onnxruntime-node';
import { generate, newCache } from '../../../../executors/llm/direct.js';
import { prefill } from '../../../../executors/llm/steps.js';
import { LlmModel } from '../../../../executors/llm/model.js';
import { inspectHfFolder } from '../../../../executors/models/hf-folder.js';
import { float16Bits } from '../../../../executors/models/onnx/float16.js';
import { referenceDecoder } from '../../../helpers/hf-reference.js';
import { llm, llmDir, userPrompt } from '../../../helpers/llm.js';

const QUESTIONS = ['Hello there, the cat', 'What is 2+2?', 'ünïcödé ✓ and 多模态', 'describe the weather briefly'];

test('float16Bits rounds to nearest even and keeps the half range (1, 65504, overflow to Inf, subnormals, −0)', (t) => {
  t.is(float16Bits(1), 0x3c00);
  t.is(float16Bits(-2), 0xc000);
  t.is(float16Bits(65504), 0x7bff);
  t.is(float16Bits(1e6), 0x7c00);
  t.is(float16Bits(2 ** -24), 0x0001);
  t.is(float16Bits(2 ** -26), 0x0000);
  t.is(float16Bits(-0), 0x8000);
  t.is(float16Bits(1 + 2 ** -11), 0x3c00, 'a tie rounds to even');
  t.is(float16Bits(1 + 3 * 2 ** -11), 0x3c02, 'a tie rounds to even (up)');
  t.is(float16Bits(Number.NaN) & 0x7c00, 0x7c00);
});

test('tiny-qwen2 carries onnx/model_fp16.onnx: float16 weights (about half the bytes), float32 inputs and outputs', async (t) => {
  const dir = await llmDir('tiny-qwen2');
  const f = await inspectHfFolder(dir);
  t.deepEqual(f.parts.decoder!.map((p) => [p.file, p.dtype]), [['onnx/model.onnx', 'fp32'], ['onnx/model_fp16.onnx', 'fp16']]);
  const [fp32, fp16] = [await stat(join(dir, 'onnx/model.onnx')), await stat(join(dir, 'onnx/model_fp16.onnx'))];
  t.true(fp16.size < 0.6 * fp32.size, `${fp16.size} vs ${fp32.size}`);
  const s = await ort.InferenceSession.create(join(dir, 'onnx/model_fp16.onnx'));
  t.teardown(() => s.release());
  const meta = (name: string, side: readonly unknown[]) => (side as { name: string; type: string }[]).find((m) => m.name === name)?.type;
  t.is(meta('past_key_values.0.key', s.inputMetadata), 'float32');
  t.is(meta('logits', s.outputMetadata), 'float32');
});

test('dtype fp16 loads model_fp16.onnx: logits differ from fp32 (half-precision weights) by at most 5e-2, and greedy tokens are equal', async (t) => {
  const dir = await llmDir('tiny-qwen2');
  const fp32 = await llm('tiny-qwen2');
  const fp16 = await LlmModel.load(dir, { threads: 1, dtype: 'fp16' });
  const ref16 = await referenceDecoder(dir, 'onnx/model_fp16.onnx');
  const ref32 = await referenceDecoder(dir);
  t.teardown(async () => { await fp16.close(); await ref16.close(); await ref32.close(); });
  let worst = 0;
  for (const q of QUESTIONS) {
    const p = userPrompt(fp32, q);
    const [a, b] = [await ref32.lastLogits(p.ids), await ref16.lastLogits(p.ids)];
    worst = Math.max(worst, a.reduce((d, x, i) => Math.max(d, Math.abs(x - b[i]!)), 0));
    const g16 = await generate(fp16, userPrompt(fp16, q), { maxTokens: 24, temperature: 0 });
    t.deepEqual(g16.tokens, (await generate(fp32, p, { maxTokens: 24, temperature: 0 })).tokens, q);
    t.deepEqual(g16.tokens, await ref16.greedy(p.ids, 24, fp32.tokenizer.eos), `${q}: fp16 served = fp16 direct loop`);
  }
  t.log(`max |logits fp16 − fp32| = ${worst}`);
  // The executor's own prefill over the fp16 model gives the fp16 file's logits, not the fp32 file's.
  const p = userPrompt(fp16, QUESTIONS[0]!);
  const cache = newCache(fp16);
  cache.reserve(1, p.n + 1, []);
  const served = (await prefill(fp16, cache, [{ embeds: p.embeds, ids: p.ids, n: p.n, slot: 0 }])).lastLogits[0]!;
  const diff = (a: Float32Array, b: Float32Array) => a.reduce((d, x, i) => Math.max(d, Math.abs(x - b[i]!)), 0);
  t.true(diff(served, await ref16.lastLogits(p.ids)) <= 1e-4, 'served fp16 = direct fp16');
  t.true(diff(served, await ref32.lastLogits(p.ids)) > 1e-4, 'served fp16 ≠ fp32');
  t.true(worst > 0, 'the fp16 file has half-precision weights');
  t.true(worst <= 5e-2, `max |logits fp16 − fp32| = ${worst}`);
});

test('a dtype the folder has no file for is a clear error naming the files it has', async (t) => {
  const e = await t.throwsAsync(LlmModel.load(await llmDir('tiny-qwen2'), { dtype: 'q4' }));
  t.regex(e!.message, /no q4 decoder part \(has onnx\/model\.onnx \(fp32\), onnx\/model_fp16\.onnx \(fp16\)\)/);
});
