/**
 * The LLM engine's admission rule, pure (the live engine and the simulator both call it): waiting requests
 * are admitted in FCFS order into one batched prefill while (1) a request that keeps a cache slot finds one
 * (running + admitted ≤ maxBatch; hidden-state-only requests need none), and (2) the padded prefill — the
 * longest prompt rounded up to the pad multiple, times the batch — stays within maxPrefillTokens (the first
 * request is always admitted). The simulator also passes a KV-cache token budget (device memory); the live
 * engine sizes its cache to maxBatch slots instead and passes none.
 */
import { roundUp } from './kv-cache.js';

export interface AdmissionLimits {
  maxBatch: number;
  maxPrefillTokens: number;
  padMultiple: number;
  /** KV-cache tokens still free (each admitted request reserves its `kvTokens`); undefined = no limit. */
  freeKvTokens?: number;
}

export interface Admissible {
  /** Prompt tokens. */
  n: number;
  /** False for a prefill-only request (hidden states): it takes no cache slot. */
  needsSlot: boolean;
  /** KV-cache tokens the request holds while it runs (prompt + output), for the freeKvTokens budget. */
  kvTokens?: number;
}

/** How many requests from the head of `waiting` the next prefill admits (0..waiting.length). */
export function admitCount<T>(waiting: readonly T[], running: number, limits: AdmissionLimits, view: (t: T) => Admissible): number {
  let slots = running;
  let longest = 0;
  let kvFree = limits.freeKvTokens ?? Infinity;
  let n = 0;
  for (; n < waiting.length; n++) {
    const a = view(waiting[n]!);
    if (a.needsSlot && slots >= limits.maxBatch) break;
    const padded = roundUp(Math.max(longest, a.n), limits.padMultiple);
    if (n > 0 && padded * (n + 1) > limits.maxPrefillTokens) break;
    const kv = a.needsSlot ? (a.kvTokens ?? 0) : 0;
    if (kv > kvFree && (n > 0 || running > 0)) break; // the first request of an idle engine always runs
    kvFree -= kv;
    longest = Math.max(longest, a.n);
    if (a.needsSlot) slots++;
  }
  return n;
}
