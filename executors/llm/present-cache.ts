/**
 * The KV cache of a running batch for decoders whose `present` is past ++ new (Optimum's graphs): the decoder's
 * own output IS the next step's past. Per layer two arenas per key and value: a step reads the past
 * [n, heads, width, headDim] from one and onnxruntime writes the present [n, heads, width + 1, headDim] straight
 * into the other (a pre-allocated output), then they swap — no copy of the cache per token. So the fed past is
 * always the live width of the batch, not a fixed capacity.
 * The new position lands at column `width` for every row, so a row shorter than the batch's longest has masked
 * columns in the middle (as Hugging Face's left padding has); each slot keeps its column mask. Copies happen only
 * when the batch changes: a prompt written into its slot, a slot moved into a hole, and a repack (each row's live
 * columns gathered to the left) once the width has grown past twice the longest sequence.
 */
import { type CacheGeometry, type LiveSlot, copyMeter } from '../../policies/kv-cache.js';

export class PresentCache {
  private cur: Float32Array[] = [];
  private next: Float32Array[] = [];
  private masks: Uint8Array[] = [];
  private rows = 0;
  private inUse = 0;
  private w = 0;

  constructor(readonly geo: CacheGeometry) {}

  /** Columns of the past the next step reads. */
  get capacity(): number {
    return this.w;
  }

  get slots(): number {
    return this.rows;
  }

  get bytes(): number {
    return [...this.cur, ...this.next].reduce((a, b) => a + b.byteLength, 0);
  }

  private get rowSize(): number {
    return this.geo.heads * this.geo.headDim;
  }

  /** Room for `slots` rows; repacks when the width has outgrown the live sequences. */
  reserve(slots: number, _positions: number, live: readonly LiveSlot[]): void {
    this.rows = Math.max(this.rows, slots);
    this.inUse = live.length;
    if (!live.length) {
      this.w = 0;
      return;
    }
    const longest = Math.max(...live.map((l) => l.len));
    if (this.w > 2 * longest + 64) this.repack(live, longest);
  }

  /** Arenas (2 per layer: keys then values) holding at least `elements` each; `keep` elements of `cur` survive. */
  private ensure(which: 'cur' | 'next', elements: number, keep = 0): Float32Array[] {
    const arenas = this[which];
    for (let i = 0; i < 2 * this.geo.layers; i++) {
      const a = arenas[i];
      if (a && a.length >= elements) continue;
      const fresh = new Float32Array(Math.max(elements, Math.ceil((a?.length ?? 0) * 1.5)));
      if (a && keep) {
        fresh.set(a.subarray(0, keep));
        copyMeter.bytes += keep * 4;
      }
      arenas[i] = fresh;
    }
    return arenas;
  }

  private mask(slot: number, cols: number): Uint8Array {
    let m = this.masks[slot];
    if (!m || m.length < cols) {
      const fresh = new Uint8Array(Math.max(cols, Math.ceil((m?.length ?? 0) * 1.5), 64));
      if (m) fresh.set(m);
      this.masks[slot] = m = fresh;
    }
    return m;
  }

  /** Re-lays rows 0..inUse-1 at width `width`: each row's live columns (mask = 1) gathered to the left. */
  private relayout(width: number, gather: boolean): void {
    const rs = this.rowSize;
    const hd = this.geo.headDim;
    const heads = this.geo.heads;
    const dst = this.ensure('next', this.rows * rs * width);
    const masks: Uint8Array[] = [];
    for (let slot = 0; slot < this.inUse; slot++) {
      const old = this.mask(slot, this.w);
      const cols = gather ? Array.from({ length: this.w }, (_, c) => c).filter((c) => old[c]) : Array.from({ length: Math.min(this.w, width) }, (_, c) => c);
      for (let i = 0; i < 2 * this.geo.layers; i++) {
        const from = this.cur[i]!;
        const to = dst[i]!;
        for (let h = 0; h < heads; h++) {
          const src = (slot * heads + h) * this.w * hd;
          const out = (slot * heads + h) * width * hd;
          if (!gather) to.set(from.subarray(src, src + cols.length * hd), out);
          else cols.forEach((c, k) => to.set(from.subarray(src + c * hd, src + (c + 1) * hd), out + k * hd));
        }
      }
      copyMeter.bytes += 2 * this.geo.layers * heads * cols.length * hd * 4;
      const m = new Uint8Array(Math.max(width, 64));
      if (gather) m.fill(1, 0, cols.length);
      else m.set(old.subarray(0, cols.length));
      masks.push(m);
    }
    masks.forEach((m, slot) => (this.masks[slot] = m));
    [this.cur, this.next] = [this.next, this.cur];
    this.w = width;
  }

  private repack(live: readonly LiveSlot[], longest: number): void {
    this.relayout(longest, true);
    live.forEach(({ slot, len }) => {
      const m = this.masks[slot]!;
      let ones = 0;
      for (let c = 0; c < this.w; c++) ones += m[c]!;
      if (ones !== len) throw new Error(`present cache: slot ${slot} holds ${ones} positions, its sequence ${len}`);
    });
  }

  /** A prompt's K/V ([batch, heads, seq, headDim] per layer, row `row`, `count` positions) into `slot`. */
  write(slot: number, at: number, keys: readonly Float32Array[], values: readonly Float32Array[], row: number, seq: number, count: number): void {
    if (at !== 0) throw new RangeError('present cache: only a prompt is written (later positions come from the decoder)');
    if (count > this.w) this.relayout(count, false);
    this.inUse = Math.max(this.inUse, slot + 1);
    this.rows = Math.max(this.rows, this.inUse);
    const { heads, headDim: hd, layers } = this.geo;
    const arenas = this.ensure('cur', this.rows * this.rowSize * this.w, this.inUse * this.rowSize * this.w);
    for (let l = 0; l < layers; l++) {
      for (const [i, src] of [[2 * l, keys[l]!], [2 * l + 1, values[l]!]] as const) {
        for (let h = 0; h < heads; h++) {
          const from = (row * heads + h) * seq * hd;
          arenas[i]!.set(src.subarray(from, from + count * hd), (slot * heads + h) * this.w * hd);
        }
      }
    }
    copyMeter.bytes += 2 * layers * heads * count * hd * 4;
    const m = this.mask(slot, this.w);
    m.fill(0);
    m.fill(1, 0, count);
  }

  /** Slot `from` into slot `to` (compaction after a sequence leaves). */
  move(from: number, to: number, _len: number): void {
    const n = this.rowSize * this.w;
    for (const a of this.cur) a.copyWithin(to * n, from * n, (from + 1) * n);
    copyMeter.bytes += 2 * this.geo.layers * n * 4;
    this.masks[to] = Uint8Array.from(this.mask(from, this.w));
  }

  /**
   * One decode step's tensors for rows 0..n-1: the past views, the mask [n, width + 1] (the new column attended),
   * and the views the present is written into. Call `advance` after the step ran.
   */
  step(n: number): { width: number; mask: BigInt64Array; pastKeys: Float32Array[]; pastValues: Float32Array[]; presentKeys: Float32Array[]; presentValues: Float32Array[] } {
    const w = this.w;
    const past = this.ensure('cur', this.rows * this.rowSize * w, this.inUse * this.rowSize * w).map((a) => a.subarray(0, n * this.rowSize * w));
    const present = this.ensure('next', this.rows * this.rowSize * (w + 1)).map((a) => a.subarray(0, n * this.rowSize * (w + 1)));
    const mask = new BigInt64Array(n * (w + 1));
    for (let b = 0; b < n; b++) {
      const m = this.mask(b, w);
      for (let c = 0; c < w; c++) if (m[c]) mask[b * (w + 1) + c] = 1n;
      mask[b * (w + 1) + w] = 1n;
    }
    const even = <T>(xs: T[]) => xs.filter((_, i) => i % 2 === 0);
    const odd = <T>(xs: T[]) => xs.filter((_, i) => i % 2 === 1);
    return { width: w, mask, pastKeys: even(past), pastValues: odd(past), presentKeys: even(present), presentValues: odd(present) };
  }

  /** The present written by the step is now the past: swap arenas, one more column attended by rows 0..n-1. */
  advance(n: number): void {
    [this.cur, this.next] = [this.next, this.cur];
    this.w++;
    for (let b = 0; b < n; b++) this.mask(b, this.w)[this.w - 1] = 1;
    this.inUse = n;
  }

  clear(): void {
    this.cur = [];
    this.next = [];
    this.masks = [];
    this.rows = 0;
    this.inUse = 0;
    this.w = 0;
  }
}
