/**
 * KV-cache decoding equals full recomputation (the reference's test of its LLM): at every step, the logits of the
 * incremental decode (one new token over the cached K/V) match the logits of a prefill over the whole sequence
 * so far (prompt + every generated token, nothing cached), and greedy tokens are the same.
 */
import test from 'ava';
import { newCache } from '../../../../executors/llm/direct.js';
import type { LlmModel } from '../../../../executors/llm/model.js';
import type { Prompt } from '../../../../executors/llm/prompt.js';
import { argmax } from '../../../../executors/llm/sampling.js';
import { decode, prefill } from '../../../../executors/llm/steps.js';
import { llm, userPrompt, type LlmName } from '../../../helpers/llm.js';

const STEPS = 20;

/** Greedy decode with the cache; the logits of every step (step 0 = the prefill's last position). */
async function incremental(m: LlmModel, p: Prompt): Promise<{ tokens: number[]; logits: Float32Array[] }> {
  const cache = newCache(m);
  cache.reserve(1, p.n + STEPS + 1, []);
  const logits = [(await prefill(m, cache, [{ embeds: p.embeds, n: p.n, slot: 0 }])).lastLogits[0]!];
  const tokens = [argmax(logits[0]!)];
  for (let len = p.n; tokens.length < STEPS; len++) {
    const row = (await decode(m, cache, [tokens[tokens.length - 1]!], [len])).logits[0]!;
    logits.push(Float32Array.from(row));
    tokens.push(argmax(row));
  }
  return { tokens, logits };
}

/** The logits of the last position of prompt + `generated`, computed from scratch (no cache). */
async function recompute(m: LlmModel, p: Prompt, generated: readonly number[]): Promise<Float32Array> {
  const h = m.config.hidden;
  const n = p.n + generated.length;
  const embeds = new Float32Array(n * h);
  embeds.set(p.embeds.subarray(0, p.n * h));
  generated.forEach((tok, i) => m.embedToken(tok, embeds, (p.n + i) * h));
  return (await prefill(m, undefined, [{ embeds, n }])).lastLogits[0]!;
}

const maxAbsDiff = (a: Float32Array, b: Float32Array) => a.reduce((d, x, i) => Math.max(d, Math.abs(x - b[i]!)), 0);

for (const name of ['tiny-lm-a', 'tiny-lm-b'] as LlmName[]) {
  test(`${name}: KV-cache decoding gives the logits and greedy tokens of recomputing the whole sequence at every step`, async (t) => {
    const m = await llm(name);
    // A media embedding at placeholder positions as well as text, so the cached prompt is not only token rows.
    const media = { rows: 6, data: Float32Array.from({ length: 6 * m.config.hidden }, (_, i) => Math.sin(i * 0.11)) };
    const p = userPrompt(m, [{ type: 'text', text: 'describe this:' }, { type: 'image_url', image_url: { url: 'u' } }, { type: 'text', text: 'briefly' }], [media]);
    const inc = await incremental(m, p);
    const scale = Math.max(...inc.logits[0]!.map(Math.abs));
    for (let step = 0; step < STEPS; step++) {
      const full = await recompute(m, p, inc.tokens.slice(0, step));
      const diff = maxAbsDiff(inc.logits[step]!, full);
      t.true(diff <= 1e-4 * Math.max(1, scale), `step ${step}: max |decode − recompute| = ${diff}`);
      t.is(argmax(full), inc.tokens[step]!, `step ${step}: greedy token`);
    }
  });
}
