/**
 * The direct in-process decode loop: the reference the server is tested against and the benchmark's baseline.
 * `generate` runs one prompt alone; `generateBatch` runs prompts as one static batch (one prefill, then decode
 * steps in lockstep; a finished sequence leaves the batch). No HTTP, no scheduler, no queue.
 *
 *   const model = await LlmModel.load(dir);
 *   const prompt = buildPrompt(model, renderChat(model.tokenizer, [{ role: 'user', content: 'hi' }]));
 *   const g = await generate(model, prompt, { maxTokens: 16, temperature: 0 });
 */
import { KvCache } from '../../policies/kv-cache.js';
import type { LlmModel } from './model.js';
import type { Prompt } from './prompt.js';
import { Sequence, type FinishReason, type GenerateOptions } from './sequence.js';
import { compact, decode, prefill } from './steps.js';

export interface Generation {
  tokens: number[];
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
}

export type { GenerateOptions };

export async function generate(model: LlmModel, prompt: Prompt, opts: GenerateOptions): Promise<Generation> {
  return (await generateBatch(model, [prompt], opts))[0]!;
}

/** Called with each new token of batch item `index`, in order. */
export type TokenCallback = (index: number, token: number, text: string) => void;

export function newCache(model: LlmModel): KvCache {
  const c = model.config;
  return new KvCache({ layers: c.layers, heads: c.heads, headDim: c.headDim, maxPositions: c.maxPositions });
}

export async function generateBatch(
  model: LlmModel, prompts: readonly Prompt[], opts: GenerateOptions | readonly GenerateOptions[], onToken?: TokenCallback,
): Promise<Generation[]> {
  const seqs = prompts.map((p, i) => new Sequence(p.n, Array.isArray(opts) ? opts[i]! : (opts as GenerateOptions), model.tokenizer, model.config.maxPositions));
  const cache = newCache(model);
  // slot i holds live[i]; `index` maps back to the caller's order
  const live = seqs.map((seq, index) => ({ seq, index }));
  cache.reserve(live.length, Math.max(...prompts.map((p) => p.n)) + 1, []);
  const first = await prefill(model, cache, prompts.map((p, slot) => ({ embeds: p.embeds, ids: p.ids, n: p.n, slot })));
  const take = (slot: number, logits: Float32Array): boolean => {
    const { seq, index } = live[slot]!;
    const token = seq.sampler.sample(logits);
    const a = seq.accept(token);
    onToken?.(index, token, a.text);
    return a.finished;
  };
  prompts.forEach((p, slot) => (live[slot]!.seq.len = p.n));
  let finished = first.lastLogits.map((l, slot) => take(slot, l));
  for (;;) {
    compact(cache, live, (_, slot) => finished[slot]!);
    if (live.length === 0) break;
    cache.reserve(live.length, Math.max(...live.map((l) => l.seq.len)) + 1, live.map((l, slot) => ({ slot, len: l.seq.len })));
    const { logits } = await decode(model, cache, live.map((l) => l.seq.lastToken), live.map((l) => l.seq.len));
    for (const l of live) l.seq.len++;
    finished = logits.map((row, slot) => take(slot, row));
  }
  return seqs.map((s) => ({ tokens: s.tokens, text: s.text, finishReason: s.finishReason!, promptTokens: s.promptTokens }));
}
