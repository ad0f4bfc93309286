/**
 * The LLM engine's admission rule, pure (the live engine and the simulator both call it): waiting requests
 * are admitted in FCFS order into one batched prefill while (1) a request that keeps a cache slot finds one
 * (running + admitted ≤ maxBatch; hidden-state-only requests need none), (2) the padded prefill — the
 * longest prompt rounded up to the pad multiple, times the batch — stays within maxPrefillTokens (the first
 * request is always admitted), and (3) with a paged KV cache (`kv`), its prompt's blocks are free above the
 * watermark, as vLLM's block manager admits. Decode then grows each sequence a block at a time; when a step
 * needs more blocks than are free, `preemptCount` says how many of the latest-admitted sequences give theirs
 * back and are recomputed later (vLLM's recompute preemption). The live engine sizes its cache to maxBatch
 * slots and passes no `kv`.
 */
import { roundUp } from './kv-cache.js';

/** A paged KV cache's state: free blocks, tokens per block, and blocks an admission must leave free. */
export interface KvBlockBudget {
  freeBlocks: number;
  blockSize: number;
  /** vLLM keeps 1% of the blocks free at admission so running sequences can grow. @default 0 */
  watermarkBlocks?: number;
}

export interface AdmissionLimits {
  maxBatch: number;
  maxPrefillTokens: number;
  padMultiple: number;
  /** Paged KV cache; undefined = no memory limit. */
  kv?: KvBlockBudget;
}

export interface Admissible {
  /** Prompt tokens. */
  n: number;
  /** False for a prefill-only request (hidden states): it takes no cache slot. */
  needsSlot: boolean;
  /** Tokens whose KV the prefill stores (the prompt, plus the tokens generated before a preemption); default n. */
  kvTokens?: number;
}

/** Blocks of `blockSize` tokens that hold `tokens` tokens. */
export const blocksFor = (tokens: number, blockSize: number) => Math.ceil(tokens / blockSize);

/** How many requests from the head of `waiting` the next prefill admits (0..waiting.length). */
export function admitCount<T>(waiting: readonly T[], running: number, limits: AdmissionLimits, view: (t: T) => Admissible): number {
  let slots = running;
  let longest = 0;
  let free = limits.kv ? limits.kv.freeBlocks - (limits.kv.watermarkBlocks ?? 0) : Infinity;
  let n = 0;
  for (; n < waiting.length; n++) {
    const a = view(waiting[n]!);
    if (a.needsSlot && slots >= limits.maxBatch) break;
    const padded = roundUp(Math.max(longest, a.n), limits.padMultiple);
    if (n > 0 && padded * (n + 1) > limits.maxPrefillTokens) break;
    const blocks = a.needsSlot && limits.kv ? blocksFor(a.kvTokens ?? a.n, limits.kv.blockSize) : 0;
    if (blocks > free) break; // waits for blocks (a request larger than the whole cache is refused before it gets here)
    free -= blocks;
    longest = Math.max(longest, a.n);
    if (a.needsSlot) slots++;
  }
  return n;
}

/** A running sequence before a decode step: blocks it holds, and blocks its next token needs (0 or 1). */
export interface RunningBlocks {
  holds: number;
  needs: number;
}

/**
 * How many sequences, from the end of `running` (the latest admitted), are preempted before a decode step so
 * every sequence left gets the blocks its next token needs (vLLM preempts the lowest-priority sequence, the
 * last in its running queue, until the rest can append). 0 when everything fits; running.length when not even
 * the first sequence alone can grow (it then waits for blocks like a new request).
 */
export function preemptCount(running: readonly RunningBlocks[], freeBlocks: number): number {
  let need = 0;
  for (const r of running) need += r.needs;
  let free = freeBlocks;
  let k = 0;
  while (k < running.length && need > free) {
    const victim = running[running.length - 1 - k]!;
    need -= victim.needs;
    free += victim.holds;
    k++;
  }
  return k;
}
