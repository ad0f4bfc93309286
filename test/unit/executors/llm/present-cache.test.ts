/**
 * Decoders whose present is past ++ new (tiny-qwen2, Optimum's layouts): each decode step's present is written by
 * onnxruntime where the next step reads its past, so no cache is copied per token; a batch with rows of
 * different lengths (masked columns in the middle) still decodes each row as it decodes alone.
 */
import test from 'ava';
import { generate, generateBatch } from '../../../../executors/llm/direct.js';
import { copyMeter } from '../../../../policies/kv-cache.js';
import { llm, samplePrompts, userPrompt } from '../../../helpers/llm.js';

// Serial: copyMeter is one counter per process, and a concurrent test's copies would count here.
test.serial('a decode step copies the logits, not the KV cache: bytes copied per token stay under one cached position plus the logits', async (t) => {
  const m = await llm('tiny-qwen2');
  const prompts = samplePrompts(4).map((p) => userPrompt(m, p));
  const copied = async (tokens: number) => {
    const b0 = copyMeter.bytes;
    await generateBatch(m, prompts, { maxTokens: tokens, temperature: 0, ignoreEos: true });
    return copyMeter.bytes - b0;
  };
  const perToken = ((await copied(24)) - (await copied(8))) / (prompts.length * 16);
  const { layers, heads, headDim, vocab } = m.config;
  t.true(perToken <= vocab * 4 + 2 * layers * heads * headDim * 4, `${perToken} bytes per token`);
});

test('prompts of different lengths in one batch, leaving at different steps, decode as each decodes alone (greedy)', async (t) => {
  const m = await llm('tiny-qwen2-merged');
  const prompts = samplePrompts(5).map((p) => userPrompt(m, p));
  const opts = prompts.map((_, i) => ({ maxTokens: 6 + 5 * i, temperature: 0, ignoreEos: true }));
  const batched = await generateBatch(m, prompts, opts);
  for (let i = 0; i < prompts.length; i++) t.deepEqual(batched[i]!.tokens, (await generate(m, prompts[i]!, opts[i]!)).tokens, `prompt ${i}`);
});
