/**
 * Deterministic weights. Each parameter draws from its own stream keyed by (seed, parameter name), so a
 * weight does not depend on the order in which the builder asks for parameters: the single graph and its
 * tensor-parallel shards see byte-identical values.
 */

/** FNV-1a over the UTF-8 bytes of `s`, mixed with `seed`. */
function hashName(seed: number, s: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (const b of Buffer.from(s, 'utf8')) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** mulberry32: a tiny 32-bit generator with good enough statistics for initial weights. */
export class Prng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

/** A named-parameter factory: `uniform(name, n, bound)` always returns the same values for the same seed and name. */
export class WeightSource {
  constructor(readonly seed: number) {}

  stream(name: string): Prng {
    return new Prng(hashName(this.seed, name));
  }

  /** `n` values uniform in [-bound, bound). */
  uniform(name: string, n: number, bound: number): Float32Array {
    const rng = this.stream(name);
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = (rng.next() * 2 - 1) * bound;
    return out;
  }

  /** A [fanIn, fanOut] matrix (row-major, as MatMul's right operand) with Xavier-uniform bound. */
  matrix(name: string, fanIn: number, fanOut: number, gain = 1): Float32Array {
    return this.uniform(name, fanIn * fanOut, gain * Math.sqrt(6 / (fanIn + fanOut)));
  }

  /** Small biases, so outputs are not trivially symmetric. */
  bias(name: string, n: number, bound = 0.02): Float32Array {
    return this.uniform(name, n, bound);
  }

  /** LayerNorm scale near 1. */
  scale(name: string, n: number): Float32Array {
    const out = this.uniform(name, n, 0.05);
    for (let i = 0; i < n; i++) out[i] = 1 + out[i]!;
    return out;
  }
}
