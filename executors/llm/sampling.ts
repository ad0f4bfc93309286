/**
 * Next-token choice from one row of logits. Temperature 0 is greedy (argmax, lowest id on ties); otherwise
 * softmax(logits / T) restricted to the smallest set of tokens whose mass reaches top_p, drawn with the
 * request's own seeded generator: a request's tokens depend on its seed and its logits only, never on the
 * requests it is batched with.
 */
import { randomInt } from 'node:crypto';
import { Prng } from '../models/onnx/prng.js';

export interface SamplingParams {
  /** @default 1 */
  temperature?: number;
  /** @default 1 */
  topP?: number;
  /** @default a random seed */
  seed?: number;
}

export function argmax(logits: Float32Array): number {
  let best = 0;
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) {
    if (logits[i]! > max) {
      max = logits[i]!;
      best = i;
    }
  }
  return best;
}

export class Sampler {
  private readonly rng: Prng;
  private readonly temperature: number;
  private readonly topP: number;

  constructor(p: SamplingParams = {}) {
    this.temperature = p.temperature ?? 1;
    this.topP = p.topP ?? 1;
    this.rng = new Prng(p.seed ?? randomInt(0, 2 ** 32 - 1));
  }

  get greedy(): boolean {
    return this.temperature < 1e-5;
  }

  sample(logits: Float32Array): number {
    if (this.greedy) return argmax(logits);
    const n = logits.length;
    let max = -Infinity;
    for (let i = 0; i < n; i++) if (logits[i]! > max) max = logits[i]!;
    const probs = new Float64Array(n);
    let sum = 0;
    for (let i = 0; i < n; i++) sum += probs[i] = Math.exp((logits[i]! - max) / this.temperature);
    const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => probs[b]! - probs[a]! || a - b);
    let keep = 0;
    let mass = 0;
    while (keep < n && (keep === 0 || mass < this.topP * sum)) mass += probs[order[keep++]!]!;
    let r = this.rng.next() * mass;
    for (let k = 0; k < keep; k++) {
      r -= probs[order[k]!]!;
      if (r < 0) return order[k]!;
    }
    return order[keep - 1]!;
  }
}
