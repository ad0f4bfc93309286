import test from 'ava';
import { generate, generateBatch } from '../../../../executors/llm/direct.js';
import { prefill } from '../../../../executors/llm/steps.js';
import { llm, samplePrompts, userPrompt } from '../../../helpers/llm.js';

const greedy = { maxTokens: 24, temperature: 0 };

test('greedy decoding is deterministic', async (t) => {
  const m = await llm('tiny-lm-b');
  const p = userPrompt(m, 'hello there');
  const a = await generate(m, p, greedy);
  const b = await generate(m, p, greedy);
  t.deepEqual(a.tokens, b.tokens);
  t.is(a.tokens.length, 24);
});

test('different prompts give different greedy outputs', async (t) => {
  const m = await llm('tiny-lm-b');
  const outs = await Promise.all(samplePrompts(4).map((s) => generate(m, userPrompt(m, s), greedy)));
  t.true(new Set(outs.map((o) => o.tokens.join())).size > 1);
});

test('prefill logits of a prompt are bit-identical alone and in a padded batch', async (t) => {
  const m = await llm('tiny-lm-a');
  const prompts = samplePrompts(6).map((s) => userPrompt(m, s));
  const batched = await prefill(m, undefined, prompts);
  for (const [i, p] of prompts.entries()) {
    const alone = await prefill(m, undefined, [p]);
    t.deepEqual(batched.lastLogits[i], alone.lastLogits[0], `prompt ${i}`);
  }
});

test('a static batch decodes every prompt exactly as it decodes alone (greedy)', async (t) => {
  const m = await llm('tiny-lm-a');
  const prompts = samplePrompts(8).map((s) => userPrompt(m, s));
  const batched = await generateBatch(m, prompts, greedy);
  for (const [i, p] of prompts.entries()) t.deepEqual(batched[i]!.tokens, (await generate(m, p, greedy)).tokens, `prompt ${i}`);
});

test('seeded sampling gives the same tokens alone and batched', async (t) => {
  const m = await llm('tiny-lm-b');
  const prompts = samplePrompts(5).map((s) => userPrompt(m, s));
  const opts = prompts.map((_, i) => ({ maxTokens: 20, temperature: 0.9, topP: 0.9, seed: 100 + i }));
  const batched = await generateBatch(m, prompts, opts);
  for (const [i, p] of prompts.entries()) t.deepEqual(batched[i]!.tokens, (await generate(m, p, opts[i]!)).tokens);
});

test('different seeds sample different tokens', async (t) => {
  const m = await llm('tiny-lm-b');
  const p = userPrompt(m, 'sample me');
  const a = await generate(m, p, { maxTokens: 32, temperature: 1, seed: 1 });
  const b = await generate(m, p, { maxTokens: 32, temperature: 1, seed: 2 });
  t.notDeepEqual(a.tokens, b.tokens);
});

test('maxTokens ends generation with finish reason length', async (t) => {
  const m = await llm('tiny-lm-b');
  const g = await generate(m, userPrompt(m, 'count'), { maxTokens: 5, temperature: 0 });
  t.is(g.tokens.length, 5);
  t.is(g.finishReason, 'length');
});

test('a stop sequence ends generation before it, with finish reason stop', async (t) => {
  const m = await llm('tiny-lm-b');
  const p = userPrompt(m, 'the quick brown fox');
  const full = await generate(m, p, { maxTokens: 40, temperature: 0 });
  const stop = full.text.slice(10, 12);
  const g = await generate(m, p, { maxTokens: 40, temperature: 0, stop: [stop] });
  t.is(g.finishReason, 'stop');
  t.is(g.text, full.text.slice(0, full.text.indexOf(stop)));
});

test('generation stops at the model context with finish reason length', async (t) => {
  const m = await llm('tiny-lm-b');
  const n = m.config.maxPositions - 8;
  const p = userPrompt(m, 'x'.repeat(n - 5)); // bos, user, end, assistant + text
  t.is(p.n, n - 1);
  const g = await generate(m, p, { maxTokens: 100, temperature: 0, ignoreEos: true });
  t.is(g.finishReason, 'length');
  t.is(p.n + g.tokens.length, m.config.maxPositions + 1);
});
