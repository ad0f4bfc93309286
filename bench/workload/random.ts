/**
 * A seeded random source for workloads: uniform, exponential, normal and gamma draws from one mulberry32 stream
 * (the same generator the model builders use). Independent streams (`fork`) keep the arrival times from
 * depending on how many draws the request mix makes, so changing `--mix` leaves the arrivals unchanged.
 */
import { Prng } from '../../executors/models/onnx/prng.js';

export class RandomSource {
  readonly #prng: Prng;

  constructor(readonly seed: number) {
    this.#prng = new Prng(seed);
  }

  /** A stream of its own for `label` (same seed and label → same stream). */
  fork(label: string): RandomSource {
    let h = (0x811c9dc5 ^ this.seed) >>> 0;
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0;
    return new RandomSource(h);
  }

  /** Uniform in [0, 1). */
  uniform(): number {
    return this.#prng.next();
  }

  /** An integer uniform in [lo, hi] (both included). */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.uniform() * (hi - lo + 1));
  }

  /** Exponential with mean 1/rate. */
  exponential(rate: number): number {
    return -Math.log(1 - this.uniform()) / rate;
  }

  /** Standard normal (Box-Muller). */
  normal(): number {
    const u = Math.max(this.uniform(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.uniform());
  }

  /** Gamma(shape, scale), mean shape·scale, by Marsaglia and Tsang (boosted for shape < 1). */
  gamma(shape: number, scale: number): number {
    if (shape < 1) return this.gamma(shape + 1, scale) * Math.pow(Math.max(this.uniform(), 1e-300), 1 / shape);
    const d = shape - 1 / 3;
    const c = 1 / Math.sqrt(9 * d);
    for (;;) {
      let x: number;
      let v: number;
      do {
        x = this.normal();
        v = 1 + c * x;
      } while (v <= 0);
      v = v * v * v;
      const u = this.uniform();
      if (u < 1 - 0.0331 * x ** 4 || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v * scale;
    }
  }

  /** An index drawn with probability proportional to `weights`. */
  pick(weights: readonly number[]): number {
    const total = weights.reduce((a, w) => a + w, 0);
    let r = this.uniform() * total;
    for (let i = 0; i < weights.length; i++) {
      r -= weights[i]!;
      if (r < 0) return i;
    }
    return weights.length - 1;
  }
}
