/**
 * The tensor-parallel LLM (tp.* decoder shards, two ranks, partials summed after attention and after the MLP)
 * computes what the single decoder computes: logits within 1e-4, the same K/V cache, the same greedy tokens.
 */
import test from 'ava';
import { generateBatch, newCache } from '../../../../executors/llm/direct.js';
import { LlmModel } from '../../../../executors/llm/model.js';
import { decode, prefill } from '../../../../executors/llm/steps.js';
import { llm, llmDir, samplePrompts, userPrompt } from '../../../helpers/llm.js';
import { EXECUTOR_ENV } from '../../../../lib/descriptor.js';

// Two devices, as the platform assigns a TP-2 executor (CPU "devices"; read when the first onnxruntime session is created).
process.env[EXECUTOR_ENV.deviceOrdinals] = '0,1';

const tp2 = (async () => LlmModel.load(await llmDir('tiny-lm-a'), { threads: 1, tensorParallel: 2 }))();
test.after.always(async () => (await tp2).close());

function maxDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

test('the TP-2 model runs over two ranks', async (t) => {
  t.is((await tp2).tensorParallel, 2);
  t.is((await llm('tiny-lm-a')).tensorParallel, 1);
});

test('TP-2 prefill and decode logits equal the single-device model\'s within 1e-4', async (t) => {
  const single = await llm('tiny-lm-a');
  const tp = await tp2;
  const prompts = samplePrompts(3).map((s) => userPrompt(single, s));
  const caches = [newCache(single), newCache(tp)];
  const maxN = Math.max(...prompts.map((p) => p.n));
  for (const c of caches) c.reserve(prompts.length, maxN + 1, []);
  const items = prompts.map((p, slot) => ({ embeds: p.embeds, ids: p.ids, n: p.n, slot }));
  const [a, b] = [await prefill(single, caches[0], items), await prefill(tp, caches[1], items)];
  prompts.forEach((_, i) => t.true(maxDiff(a.lastLogits[i]!, b.lastLogits[i]!) < 1e-4, `prefill ${i}: ${maxDiff(a.lastLogits[i]!, b.lastLogits[i]!)}`));
  const tokens = [72, 105, 33];
  const lens = prompts.map((p) => p.n);
  const [da, db] = [await decode(single, caches[0]!, tokens, lens), await decode(tp, caches[1]!, tokens, lens)];
  prompts.forEach((_, i) => t.true(maxDiff(da.logits[i]!, db.logits[i]!) < 1e-4, `decode ${i}: ${maxDiff(da.logits[i]!, db.logits[i]!)}`));
});

test('TP-2 greedy tokens equal the single-device model\'s', async (t) => {
  const single = await llm('tiny-lm-a');
  const tp = await tp2;
  const prompts = samplePrompts(4).map((s) => userPrompt(single, s));
  const opts = { maxTokens: 20, temperature: 0 };
  const [a, b] = [await generateBatch(single, prompts, opts), await generateBatch(tp, prompts, opts)];
  t.deepEqual(b.map((g) => g.tokens), a.map((g) => g.tokens));
  t.true(a.every((g) => g.tokens.length > 0));
});

test('tensor parallelism over a degree the folder has no shards for is a clear model error', async (t) => {
  await t.throwsAsync(async () => LlmModel.load(await llmDir('tiny-lm-b'), { threads: 1, tensorParallel: 4 }), { message: /has shards for tensor parallelism 2, not 4/ });
});
