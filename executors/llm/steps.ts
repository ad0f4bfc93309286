/**
 * The two kinds of decoder calls, shared by the direct loop and the engine (so both compute exactly alike):
 *  - prefill: several prompts at once, each padded to the batch's longest (rounded up to the pad multiple),
 *    over an empty (masked) past; their K/V go into their cache slots.
 *  - decode: one new token for each of the first n slots, over the slots' cached positions.
 * A sequence's numbers do not depend on the batch: pad lengths are multiples of the pad multiple, padding is
 * masked at the end, and every row is computed independently (tested in test/unit/executors/llm/).
 */
import { KvCache, roundUp } from '../../policies/kv-cache.js';
import type { LlmModel } from './model.js';
import { PresentCache } from './present-cache.js';

/** The cache a model's steps use: slots at a fixed capacity (present = new positions), or the decoder's own present. */
export type StepCache = KvCache | PresentCache;

export function newCache(model: LlmModel): StepCache {
  const c = model.config;
  const geo = { layers: c.layers, heads: c.heads, headDim: c.headDim, maxPositions: c.maxPositions };
  return model.presentFull ? new PresentCache(geo) : new KvCache(geo);
}

export interface PrefillItem {
  /** Prompt input embeddings [n, hidden] (token embeddings with multimodal rows at placeholders). */
  embeds: Float32Array;
  /** Prompt token ids (what a decoder taking input_ids is fed). */
  ids?: readonly number[];
  n: number;
  /** The cache slot that receives the prompt's K/V (none: prefill only, e.g. hidden states). */
  slot?: number;
}

export interface PrefillResult {
  /** Per item: logits [vocab] of its last prompt position. */
  lastLogits: Float32Array[];
  /** Per item, when asked: the final hidden states [n, hidden]. */
  hidden?: Float32Array[];
}

/** The padded prompt length of a prefill batch. */
export function prefillLength(model: LlmModel, items: readonly { n: number }[]): number {
  return roundUp(Math.max(...items.map((i) => i.n)), model.config.padMultiple);
}

export async function prefill(model: LlmModel, cache: StepCache | undefined, items: readonly PrefillItem[], wantHidden = false): Promise<PrefillResult> {
  const { hidden, heads, headDim, layers, vocab, padMultiple } = model.config;
  const batch = items.length;
  const seq = prefillLength(model, items);
  // Optimum's graphs concatenate past and new: their prompt runs over an empty past (the merged decoder's
  // no-cache branch, the pair's decoder_model). Built-in graphs take an all-masked past: one shape for every prefill.
  const past = model.presentFull ? 0 : padMultiple;
  const embeds = new Float32Array(model.takesIds ? 0 : batch * seq * hidden);
  const ids = model.takesIds ? new BigInt64Array(batch * seq) : undefined;
  const positions = new BigInt64Array(batch * seq);
  const mask = new BigInt64Array(batch * (past + seq));
  items.forEach((it, b) => {
    if (ids) {
      if (!it.ids) throw new Error('prefill: this model takes input_ids and the item has none');
      for (let s = 0; s < it.n; s++) ids[b * seq + s] = BigInt(it.ids[s]!);
    } else embeds.set(it.embeds.subarray(0, it.n * hidden), b * seq * hidden);
    for (let s = 0; s < it.n; s++) {
      positions[b * seq + s] = BigInt(s);
      mask[b * (past + seq) + past + s] = 1n;
    }
  });
  const zeros = new Float32Array(batch * heads * past * headDim);
  const out = await model.run({
    batch, seq, past, embeds, positions, mask, ...(ids ? { ids } : {}),
    pastKeys: Array(layers).fill(zeros), pastValues: Array(layers).fill(zeros), wantHidden,
  });
  items.forEach((it, b) => {
    if (it.slot !== undefined) cache!.write(it.slot, 0, out.keys, out.values, b, seq, it.n);
  });
  return {
    lastLogits: items.map((it, b) => out.logits.slice((b * seq + it.n - 1) * vocab, (b * seq + it.n) * vocab)),
    ...(wantHidden ? { hidden: items.map((it, b) => out.hidden!.slice(b * seq * hidden, (b * seq + it.n) * hidden)) } : {}),
  };
}

export interface DecodeResult {
  /** Per slot: logits [vocab] (views into the step's output). */
  logits: Float32Array[];
  /** Per slot, when asked: the final hidden state [hidden] the logits came from. */
  hidden?: Float32Array[];
}

/**
 * One decode step for slots 0..n-1: `tokens[i]` is fed at position `lens[i]` of slot i; its K/V are written
 * there. Returns each slot's logits [vocab] (and hidden state). The cache must hold `max(lens) + 1` positions.
 */
export async function decode(model: LlmModel, cache: StepCache, tokens: readonly number[], lens: readonly number[], wantHidden = false): Promise<DecodeResult> {
  if (cache instanceof PresentCache) return decodeInPlace(model, cache, tokens, lens, wantHidden);
  const { hidden, vocab } = model.config;
  const batch = tokens.length;
  const past = cache.capacity;
  const embeds = new Float32Array(model.takesIds ? 0 : batch * hidden);
  const ids = model.takesIds ? BigInt64Array.from(tokens, (t) => BigInt(t)) : undefined;
  const positions = new BigInt64Array(batch);
  const mask = new BigInt64Array(batch * (past + 1));
  for (let b = 0; b < batch; b++) {
    if (!ids) model.embedToken(tokens[b]!, embeds, b * hidden);
    const len = lens[b]!;
    positions[b] = BigInt(len);
    const row = b * (past + 1);
    mask.fill(1n, row, row + len);
    mask[row + past] = 1n;
  }
  const { keys: pastKeys, values: pastValues } = cache.past(batch);
  const out = await model.run({ batch, seq: 1, past, embeds, positions, mask, pastKeys, pastValues, wantHidden, ...(ids ? { ids } : {}) });
  for (let b = 0; b < batch; b++) cache.write(b, lens[b]!, out.keys, out.values, b, 1, 1);
  return {
    logits: Array.from({ length: batch }, (_, b) => out.logits.subarray(b * vocab, (b + 1) * vocab)),
    ...(wantHidden ? { hidden: Array.from({ length: batch }, (_, b) => out.hidden!.subarray(b * hidden, (b + 1) * hidden)) } : {}),
  };
}

/** A decode step whose present is written where the next step reads its past (PresentCache): no cache copy. */
async function decodeInPlace(model: LlmModel, cache: PresentCache, tokens: readonly number[], lens: readonly number[], wantHidden: boolean): Promise<DecodeResult> {
  const { hidden, vocab } = model.config;
  const batch = tokens.length;
  const embeds = new Float32Array(model.takesIds ? 0 : batch * hidden);
  const ids = model.takesIds ? BigInt64Array.from(tokens, (t) => BigInt(t)) : undefined;
  if (!ids) tokens.forEach((t, b) => model.embedToken(t, embeds, b * hidden));
  const positions = BigInt64Array.from(lens, (l) => BigInt(l));
  const s = cache.step(batch);
  const out = await model.run({
    batch, seq: 1, past: s.width, embeds, positions, mask: s.mask, pastKeys: s.pastKeys, pastValues: s.pastValues, wantHidden,
    into: { keys: s.presentKeys, values: s.presentValues }, ...(ids ? { ids } : {}),
  });
  cache.advance(batch);
  return {
    logits: Array.from({ length: batch }, (_, b) => out.logits.subarray(b * vocab, (b + 1) * vocab)),
    ...(wantHidden ? { hidden: Array.from({ length: batch }, (_, b) => out.hidden!.subarray(b * hidden, (b + 1) * hidden)) } : {}),
  };
}

/**
 * Removes the slots for which `drop` is true, keeping live slots at 0..n-1: the last live slot moves into each
 * hole (its cache positions are copied). `live[i]` is the occupant of slot i.
 */
export function compact<T extends { seq: { len: number } }>(cache: StepCache, live: T[], drop: (item: T, slot: number) => boolean): T[] {
  const dropped: T[] = [];
  for (let slot = live.length - 1; slot >= 0; slot--) {
    if (!drop(live[slot]!, slot)) continue;
    dropped.push(live[slot]!);
    const last = live.length - 1;
    if (slot !== last) {
      cache.move(last, slot, live[last]!.seq.len);
      live[slot] = live[last]!;
    }
    live.pop();
  }
  return dropped;
}
