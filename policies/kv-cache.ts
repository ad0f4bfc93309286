/**
 * The KV cache of a running batch: per layer one key and one value buffer laid out [slots, heads, capacity,
 * headDim]. A sequence owns one slot and keeps its positions at 0..len-1; positions past `len` are masked
 * (and always finite). Live sequences occupy slots 0..n-1, so the first n slots ARE the decoder's
 * `past_key_values` input ([n, heads, capacity, headDim]) with no copy. A sequence that leaves is replaced by
 * the last slot's sequence (one slot copied). The buffers grow (and shrink) by reallocating and copying only
 * live positions.
 */
export interface CacheGeometry {
  layers: number;
  heads: number;
  headDim: number;
  /** Capacity never exceeds this (rounded up to `granule`). */
  maxPositions: number;
  /** Capacity is a multiple of this (a multiple of the model's pad multiple). @default 64 */
  granule?: number;
}

export interface LiveSlot { slot: number; len: number }

/**
 * Bytes of KV and logits data copied by the executor's decode path in this process: decoder outputs that
 * onnxruntime-node copies into fresh JS buffers (every output not written into a pre-allocated tensor; inputs
 * are read in place), slices of them, and cache writes, moves and relayouts. The benchmark reads it per token.
 */
export const copyMeter = { bytes: 0 };

/** x rounded up to a multiple of m (capacities and padded lengths). */
export const roundUp = (x: number, m: number) => Math.ceil(x / m) * m;

export class KvCache {
  readonly granule: number;
  private keys: Float32Array[] = [];
  private values: Float32Array[] = [];
  private slotsAllocated = 0;
  private cap = 0;

  constructor(readonly geo: CacheGeometry) {
    this.granule = geo.granule ?? 64;
  }

  /** Positions per slot (the decoder's `past` length). */
  get capacity(): number {
    return this.cap;
  }

  get slots(): number {
    return this.slotsAllocated;
  }

  /** Bytes held by the buffers. */
  get bytes(): number {
    return 2 * this.geo.layers * this.slotsAllocated * this.slotStride * 4;
  }

  private get slotStride(): number {
    return this.geo.heads * this.cap * this.geo.headDim;
  }

  /**
   * Makes room for `slots` sequences of up to `positions` positions each, keeping the live ones. Grows by at
   * least half (amortised copies); shrinks when the need falls under a quarter of the capacity.
   */
  reserve(slots: number, positions: number, live: readonly LiveSlot[]): void {
    const limit = roundUp(this.geo.maxPositions, this.granule);
    const needCap = Math.min(limit, roundUp(Math.max(positions, 1), this.granule));
    const growCap = needCap > this.cap;
    const shrinkCap = this.cap > 2 * this.granule && needCap * 4 < this.cap;
    const growSlots = slots > this.slotsAllocated;
    if (!growCap && !shrinkCap && !growSlots) return;
    const cap = growCap ? Math.min(limit, Math.max(needCap, roundUp(this.cap * 1.5, this.granule))) : shrinkCap ? roundUp(needCap * 2, this.granule) : this.cap;
    const nSlots = growSlots ? Math.max(slots, this.slotsAllocated * 2) : this.slotsAllocated;
    this.relayout(nSlots, Math.max(cap, needCap), live);
  }

  private relayout(slots: number, cap: number, live: readonly LiveSlot[]): void {
    const { layers, heads, headDim } = this.geo;
    const size = slots * heads * cap * headDim;
    const copy = (old: Float32Array, fresh: Float32Array) => {
      for (const { slot, len } of live) {
        for (let h = 0; h < heads; h++) {
          const from = ((slot * heads + h) * this.cap) * headDim;
          const to = ((slot * heads + h) * cap) * headDim;
          fresh.set(old.subarray(from, from + Math.min(len, cap) * headDim), to);
        }
        copyMeter.bytes += heads * Math.min(len, cap) * headDim * 4;
      }
      return fresh;
    };
    const keys: Float32Array[] = [];
    const values: Float32Array[] = [];
    for (let l = 0; l < layers; l++) {
      keys.push(this.keys[l] ? copy(this.keys[l]!, new Float32Array(size)) : new Float32Array(size));
      values.push(this.values[l] ? copy(this.values[l]!, new Float32Array(size)) : new Float32Array(size));
    }
    this.keys = keys;
    this.values = values;
    this.slotsAllocated = slots;
    this.cap = cap;
  }

  /**
   * Writes `count` new positions of batch row `row` from a step's present tensors ([batch, heads, seq, headDim]
   * per layer, `seq` positions per row) into `slot` starting at position `at`.
   */
  write(slot: number, at: number, keys: readonly Float32Array[], values: readonly Float32Array[], row: number, seq: number, count: number): void {
    const { layers, heads, headDim } = this.geo;
    if (at + count > this.cap) throw new RangeError(`kv cache: positions ${at}..${at + count} exceed capacity ${this.cap}`);
    const n = count * headDim;
    for (let l = 0; l < layers; l++) {
      const k = keys[l]!;
      const v = values[l]!;
      for (let h = 0; h < heads; h++) {
        const src = (row * heads + h) * seq * headDim;
        const dst = ((slot * heads + h) * this.cap + at) * headDim;
        this.keys[l]!.set(k.subarray(src, src + n), dst);
        this.values[l]!.set(v.subarray(src, src + n), dst);
      }
    }
    copyMeter.bytes += 2 * layers * heads * n * 4;
  }

  /** Copies the first `len` positions of slot `from` into slot `to` (compaction after a sequence leaves). */
  move(from: number, to: number, len: number): void {
    const { layers, heads, headDim } = this.geo;
    for (let l = 0; l < layers; l++) {
      for (const buf of [this.keys[l]!, this.values[l]!]) {
        for (let h = 0; h < heads; h++) {
          const src = (from * heads + h) * this.cap * headDim;
          const dst = (to * heads + h) * this.cap * headDim;
          buf.copyWithin(dst, src, src + len * headDim);
        }
      }
    }
    copyMeter.bytes += 2 * layers * heads * len * headDim * 4;
  }

  /** The first `n` slots as past_key_values inputs (views, no copy). */
  past(n: number): { keys: Float32Array[]; values: Float32Array[] } {
    const size = n * this.slotStride;
    return { keys: this.keys.map((k) => k.subarray(0, size)), values: this.values.map((v) => v.subarray(0, size)) };
  }

  /** Frees the buffers (an idle engine holds no cache). */
  clear(): void {
    this.keys = [];
    this.values = [];
    this.slotsAllocated = 0;
    this.cap = 0;
  }
}
