/**
 * A Hugging Face-layout decoder (tiny-qwen2: Qwen2-style, grouped-query attention, Optimum I/O names, byte-level
 * BPE tokenizer.json, ChatML chat_template) served by the LLM executor's own steps, cache and engine, checked
 * against a plain onnxruntime loop that recomputes the whole sequence at every step (test/helpers/hf-reference.ts).
 */
import test from 'ava';
import { generate, newCache } from '../../../../executors/llm/direct.js';
import { HfTokenizer } from '../../../../executors/llm/hf-tokenizer.js';
import { argmax } from '../../../../executors/llm/sampling.js';
import { decode, prefill } from '../../../../executors/llm/steps.js';
import { referenceDecoder } from '../../../helpers/hf-reference.js';
import { llm, llmDir, postChat, startLlmServer, userPrompt } from '../../../helpers/llm.js';

const QUESTIONS = ['Hello there, the cat', 'What is 2+2?', 'ünïcödé ✓ and 多模态'];

test('the HF decoder loads with the grouped-query KV geometry of its config.json', async (t) => {
  const m = await llm('tiny-qwen2');
  t.is(m.kind, 'hf-decoder');
  t.true(m.takesIds);
  t.deepEqual({ heads: m.config.heads, headDim: m.config.headDim, layers: m.config.layers }, { heads: 2, headDim: 16, layers: 2 });
});

test('tiny-qwen2: greedy generation through the steps and KV cache equals the full-recompute onnxruntime loop token for token', async (t) => {
  const m = await llm('tiny-qwen2');
  const ref = await referenceDecoder(await llmDir('tiny-qwen2'));
  t.teardown(() => ref.close());
  for (const q of QUESTIONS) {
    const p = userPrompt(m, q);
    const g = await generate(m, p, { maxTokens: 24, temperature: 0 });
    t.deepEqual(g.tokens, await ref.greedy(p.ids, 24, m.tokenizer.eos), q);
  }
});

test('tiny-qwen2: KV-cache decoding gives the logits of recomputing the whole sequence at every step', async (t) => {
  const m = await llm('tiny-qwen2');
  const ref = await referenceDecoder(await llmDir('tiny-qwen2'));
  t.teardown(() => ref.close());
  const p = userPrompt(m, 'describe the weather briefly');
  const cache = newCache(m);
  cache.reserve(1, p.n + 17, []);
  let logits = (await prefill(m, cache, [{ embeds: p.embeds, ids: p.ids, n: p.n, slot: 0 }])).lastLogits[0]!;
  const seq = [...p.ids];
  for (let step = 0; step < 16; step++) {
    const full = await ref.lastLogits(seq);
    const diff = logits.reduce((d, x, i) => Math.max(d, Math.abs(x - full[i]!)), 0);
    t.true(diff <= 1e-4, `step ${step}: max |cached − recomputed| = ${diff}`);
    const next = argmax(logits);
    t.is(next, argmax(full), `step ${step}: greedy token`);
    logits = Float32Array.from((await decode(m, cache, [next], [seq.length])).logits[0]!);
    seq.push(next);
  }
});

test('tiny-qwen2: the served chat completion is the reference greedy continuation, decoded', async (t) => {
  const m = await llm('tiny-qwen2');
  const ref = await referenceDecoder(await llmDir('tiny-qwen2'));
  const s = await startLlmServer(m);
  t.teardown(async () => {
    await s.close();
    await ref.close();
  });
  // Several at once, so the engine batches them (continuous batching over the GQA cache).
  const replies = await Promise.all(QUESTIONS.map((q) => postChat(s.url, { model: 'tiny-qwen2', messages: [{ role: 'user', content: q }], max_tokens: 20, temperature: 0 })));
  for (const [i, q] of QUESTIONS.entries()) {
    const expected = await ref.greedy(userPrompt(m, q).ids, 20, m.tokenizer.eos);
    t.is(replies[i]!.status, 200);
    t.is(replies[i]!.body.usage.completion_tokens, expected.length, q);
    t.is(replies[i]!.body.choices[0].message.content, m.tokenizer.decode(expected), q);
  }
});

test('the ChatML template renders as transformers renders it: default system turn, each message, then the generation prompt', async (t) => {
  const tok = await HfTokenizer.load(await llmDir('tiny-qwen2'));
  t.is(tok.renderText([{ role: 'user', content: 'Hi' }]),
    '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
  t.is(tok.renderText([{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'A' }, { role: 'assistant', content: 'B' }, { role: 'user', content: 'C' }], false),
    '<|im_start|>system\nBe terse.<|im_end|>\n<|im_start|>user\nA<|im_end|>\n<|im_start|>assistant\nB<|im_end|>\n<|im_start|>user\nC<|im_end|>\n');
});

test('ChatML markers in the rendered chat encode as their special token ids, and decoding skips them', async (t) => {
  const tok = await HfTokenizer.load(await llmDir('tiny-qwen2'));
  const ids = tok.encode('<|im_start|>user\nsay the cat<|im_end|>');
  t.is(ids[0], tok.tokenId('<|im_start|>'));
  t.is(ids[ids.length - 1], tok.tokenId('<|im_end|>'));
  t.true(ids.includes(tok.tokenId('Ġthe')!), 'BPE merges apply');
  t.is(tok.decode(ids), 'user\nsay the cat');
  t.is(tok.decode([]), '');
});

test('generation stops on any EOS id listed in generation_config.json', async (t) => {
  const tok = await HfTokenizer.load(await llmDir('tiny-qwen2'));
  t.deepEqual([...tok.eos].sort(), [tok.tokenId('<|im_end|>')!, tok.tokenId('<|endoftext|>')!].sort());
});

test('streamed text pieces of a multi-byte continuation concatenate to the one-shot decode', async (t) => {
  const tok = await HfTokenizer.load(await llmDir('tiny-qwen2'));
  const ids = tok.encode('ünïcödé ✓ 多模态 the end');
  const s = tok.stream();
  const pieces = ids.map((id) => s.push(id));
  pieces.push(s.flush());
  t.false(pieces.some((p) => p.includes('\uFFFD')));
  t.is(pieces.join(''), tok.decode(ids));
});

test('after every token the streamed text is the one-shot decode of the tokens so far, held back only at an incomplete UTF-8 tail', async (t) => {
  const tok = await HfTokenizer.load(await llmDir('tiny-qwen2'));
  const ids = tok.encode('<|im_start|>assistant\nünïcödé ✓ 多模态 — the end, and a longer tail of plain words to decode<|im_end|>');
  const s = tok.stream();
  let out = '';
  ids.forEach((id, k) => {
    out += s.push(id);
    const full = tok.decode(ids.slice(0, k + 1));
    t.is(out, full.endsWith('\uFFFD') ? out : full, `after token ${k}`);
    t.true(full.startsWith(out), `after token ${k}`);
  });
  t.is(out + s.flush(), tok.decode(ids));
});
