/**
 * Transformer building blocks over GraphBuilder. Parameters come from a ParamStore (seeded, named), so
 * the same layer can be emitted whole or as a tensor-parallel shard (a slice of heads / MLP columns)
 * with identical values.
 */
import type { GraphBuilder } from './graph-builder.js';
import { WeightSource } from './prng.js';

type Init = 'matrix' | 'bias' | 'scale' | 'zeros';

/** Named parameters generated once per name; shards take slices of the full tensors. */
export class ParamStore {
  private readonly cache = new Map<string, Float32Array>();
  private readonly src: WeightSource;
  constructor(readonly seed: number) {
    this.src = new WeightSource(seed);
  }

  get(name: string, dims: readonly number[], init: Init, gain = 1): Float32Array {
    const hit = this.cache.get(name);
    if (hit) return hit;
    const n = dims.reduce((a, b) => a * b, 1);
    let v: Float32Array;
    if (init === 'matrix') {
      const fanOut = dims[dims.length - 1]!;
      v = this.src.matrix(name, n / fanOut, fanOut, gain);
    } else if (init === 'bias') v = this.src.bias(name, n);
    else if (init === 'scale') v = this.src.scale(name, n);
    else v = new Float32Array(n);
    this.cache.set(name, v);
    return v;
  }
}

/** Columns [c0, c1) of a row-major [rows, cols] matrix. */
export function sliceCols(m: Float32Array, rows: number, cols: number, c0: number, c1: number): Float32Array {
  const w = c1 - c0;
  const out = new Float32Array(rows * w);
  for (let r = 0; r < rows; r++) out.set(m.subarray(r * cols + c0, r * cols + c1), r * w);
  return out;
}

/** Rows [r0, r1) of a row-major [rows, cols] matrix. */
export function sliceRows(m: Float32Array, cols: number, r0: number, r1: number): Float32Array {
  return m.slice(r0 * cols, r1 * cols);
}

export interface LinearOpts {
  /** Emit only output columns [c0, c1) (column-parallel shard). */
  cols?: readonly [number, number];
  /** Emit only input rows [r0, r1) (row-parallel shard: the output is a partial sum). */
  rows?: readonly [number, number];
  /** Add the bias (a row-parallel shard adds it on one rank only). Default true. */
  bias?: boolean;
  gain?: number;
}

/** x[.., din] @ W[din, dout] + b, possibly a shard of it. */
export function linear(g: GraphBuilder, p: ParamStore, x: string, name: string, din: number, dout: number, o: LinearOpts = {}): string {
  let w = p.get(`${name}.weight`, [din, dout], 'matrix', o.gain ?? 1);
  let b = p.get(`${name}.bias`, [dout], 'bias');
  let rows = din;
  let cols = dout;
  let suffix = '';
  if (o.cols) {
    w = sliceCols(w, rows, cols, o.cols[0], o.cols[1]);
    b = b.slice(o.cols[0], o.cols[1]);
    cols = o.cols[1] - o.cols[0];
    suffix += `.c${o.cols[0]}_${o.cols[1]}`;
  }
  if (o.rows) {
    w = sliceRows(w, cols, o.rows[0], o.rows[1]);
    rows = o.rows[1] - o.rows[0];
    suffix += `.r${o.rows[0]}_${o.rows[1]}`;
  }
  const y = g.matmul(x, g.initializer(`${name}.weight${suffix}`, w, [rows, cols]));
  return o.bias === false ? y : g.add(y, g.initializer(`${name}.bias${suffix}`, b, [cols]));
}

export function layerNorm(g: GraphBuilder, p: ParamStore, x: string, name: string, d: number): string {
  const s = g.initializer(`${name}.weight`, p.get(`${name}.weight`, [d], 'scale'), [d]);
  const b = g.initializer(`${name}.bias`, p.get(`${name}.bias`, [d], 'bias'), [d]);
  return g.layerNorm(x, s, b, 1e-5);
}

/** Additive attention bias [N, N]: 0 where segment ids match, -1e9 elsewhere (block-diagonal attention). */
export function segmentMask(g: GraphBuilder, segmentIds: string): string {
  const same = g.equal(g.unsqueeze(segmentIds, [1]), g.unsqueeze(segmentIds, [0]));
  return g.where(same, g.constF([0], []), g.constF([-1e9], []));
}

export interface AttentionCfg { dim: number; heads: number }

/**
 * Multi-head self-attention over x [N, dim]. With `headRange` only those heads are computed and the output
 * projection uses the matching rows: the result is this shard's partial sum (bias only when `outBias`).
 */
export function attention(
  g: GraphBuilder, p: ParamStore, x: string, mask: string | undefined, name: string, cfg: AttentionCfg,
  shard: { headRange?: readonly [number, number]; outBias?: boolean } = {},
): string {
  const hd = cfg.dim / cfg.heads;
  const [h0, h1] = shard.headRange ?? [0, cfg.heads];
  const nh = h1 - h0;
  const cols = shard.headRange ? ([h0 * hd, h1 * hd] as const) : undefined;
  const proj = (which: string) => {
    const y = linear(g, p, x, `${name}.${which}`, cfg.dim, cfg.dim, cols ? { cols } : {});
    return g.transpose(g.reshape(y, [0, nh, hd]), [1, 0, 2]); // [nh, N, hd]
  };
  const q = proj('q');
  const k = proj('k');
  const v = proj('v');
  let scores = g.mul(g.matmul(q, g.transpose(k, [0, 2, 1])), g.constF([1 / Math.sqrt(hd)], []));
  if (mask) scores = g.add(scores, mask);
  const ctx = g.matmul(g.softmax(scores, -1), v); // [nh, N, hd]
  const merged = g.reshape(g.transpose(ctx, [1, 0, 2]), [0, nh * hd]);
  return linear(g, p, merged, `${name}.o`, cfg.dim, cfg.dim, {
    ...(cols ? { rows: cols } : {}),
    bias: shard.outBias ?? true,
  });
}

/** fc1 → GELU → fc2; with `colRange` a shard of the hidden columns (partial sum out). */
export function mlp(
  g: GraphBuilder, p: ParamStore, x: string, name: string, dim: number, hidden: number,
  shard: { colRange?: readonly [number, number]; outBias?: boolean } = {},
): string {
  const cols = shard.colRange;
  const h = g.gelu(linear(g, p, x, `${name}.fc1`, dim, hidden, cols ? { cols } : {}));
  return linear(g, p, h, `${name}.fc2`, hidden, dim, { ...(cols ? { rows: cols } : {}), bias: shard.outBias ?? true });
}

export interface BlockCfg extends AttentionCfg { mlpHidden: number }

/** Pre-LN transformer block: x + Attn(LN(x)); x + MLP(LN(x)). */
export function transformerBlock(g: GraphBuilder, p: ParamStore, x: string, mask: string | undefined, name: string, cfg: BlockCfg): string {
  const a = g.add(x, attention(g, p, layerNorm(g, p, x, `${name}.ln1`, cfg.dim), mask, `${name}.attn`, cfg));
  return g.add(a, mlp(g, p, layerNorm(g, p, a, `${name}.ln2`, cfg.dim), `${name}.mlp`, cfg.dim, cfg.mlpHidden));
}

/** Sinusoidal position table [n, dim] (Whisper/Transformer style). */
export function sinusoids(n: number, dim: number): Float32Array {
  const out = new Float32Array(n * dim);
  const half = dim / 2;
  const inc = Math.log(10000) / (half - 1);
  for (let pos = 0; pos < n; pos++) {
    for (let i = 0; i < half; i++) {
      const t = pos * Math.exp(-inc * i);
      out[pos * dim + i] = Math.sin(t);
      out[pos * dim + half + i] = Math.cos(t);
    }
  }
  return out;
}
