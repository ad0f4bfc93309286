/**
 * Cutting a stream of embedding rows (an LLM's hidden states, one chunk per generated token) into vocoder
 * segments, so audio is made while the rows still arrive. A plain module, no I/O.
 *
 * A segment covers every complete chunk window (`chunkSize` rows) since the last segment, preceded by up to
 * `leftContext` earlier rows as context (its `startFrame`); when the stream has ended, the rest. Vocoding the
 * segments one after another (generateAudio with `startFrame`) makes exactly the windows — hence the samples — of
 * one generateAudio run over all the rows. Rows no later window can reach are dropped, so memory stays bounded.
 */
export interface AudioSegment {
  /** [rows, hidden] row-major: left context first, then the rows to voice (may be a view of a pushed array). */
  data: Float32Array;
  rows: number;
  /** Rows of `data` that are left context only. */
  startFrame: number;
}

export class AudioSegmenter {
  /** Rows kept, starting at global row `base`. */
  private buf: Float32Array[] = [];
  private base = 0;
  private total = 0;
  /** The first row not yet voiced. */
  private next = 0;

  constructor(readonly hidden: number, readonly chunkSize: number, readonly leftContext: number) {
    if (!Number.isInteger(chunkSize) || chunkSize < 1) throw new RangeError(`chunkSize must be a positive integer, got ${chunkSize}`);
  }

  /** Rows received so far. */
  get rows(): number {
    return this.total;
  }

  push(rows: Float32Array): void {
    if (rows.length % this.hidden !== 0) throw new RangeError(`${rows.length} values are not whole rows of ${this.hidden}`);
    this.buf.push(rows);
    this.total += rows.length / this.hidden;
  }

  /** The next segment: every complete window since the last one, or (`ended`) everything left; undefined when none. */
  take(ended: boolean): AudioSegment | undefined {
    const end = ended ? this.total : this.next + Math.floor((this.total - this.next) / this.chunkSize) * this.chunkSize;
    if (end <= this.next) return undefined;
    const from = Math.max(0, this.next - this.leftContext);
    const all = this.rowsFrom(from);
    const segment = { data: all.subarray(0, (end - from) * this.hidden), rows: end - from, startFrame: this.next - from };
    this.next = end;
    // keep only what a later window may use as context (and what has not been voiced)
    const keepFrom = Math.max(0, this.next - this.leftContext);
    this.buf = [all.slice((keepFrom - from) * this.hidden)];
    this.base = keepFrom;
    return segment;
  }

  /**
   * Rows [from, total) as one matrix (from ≥ base). When they are exactly one pushed array (a one-chunk input,
   * every audio request that is not a stream) that array itself: no copy of the whole input per request.
   */
  private rowsFrom(from: number): Float32Array {
    if (this.buf.length === 1 && from === this.base) return this.buf[0]!;
    const out = new Float32Array((this.total - from) * this.hidden);
    let row = this.base;
    let off = 0;
    for (const b of this.buf) {
      const n = b.length / this.hidden;
      const skip = Math.max(0, from - row);
      if (skip < n) {
        out.set(b.subarray(skip * this.hidden), off);
        off += (n - skip) * this.hidden;
      }
      row += n;
    }
    return out;
  }
}
