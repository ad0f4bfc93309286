/**
 * Sum all-reduce across the tensor-parallel worker threads of one engine, through shared memory.
 *
 * Layout: Int32 control [arrivals, aborted], then two banks (even / odd steps) of `size` slots of
 * `slotFloats` float32 each. One step: every rank writes its chunk into its slot of bank (step % 2), arrives at
 * a barrier (Atomics.add + Atomics.wait until arrivals reach size·(step+1)), then every rank sums all slots
 * in rank order, so every rank holds bit-identical results. Two banks make one barrier per step enough: a
 * rank can only overwrite bank b at step s+2 after every rank arrived at step s+1, i.e. finished reading s.
 * Vectors longer than a slot go through in several steps.
 *
 * Failure: `abort()` (the engine, when a worker dies; or a rank whose computation failed mid-job) wakes every
 * waiting rank with EXECUTOR_CHANNEL_CLOSED. The engine calls `reset()` only while no rank is inside a job,
 * and tells the ranks (job.resetReduce) to restart their step counters.
 */
import { ExecutorErrorCode, executorError } from '../../lib/executor-errors.js';

const ARRIVALS = 0;
const ABORTED = 1;
const CONTROL_BYTES = 64;
const SLICE_MS = 250;

export interface AllReduceHandle { sab: SharedArrayBuffer; size: number; slotFloats: number }

export class ShmAllReduce {
  private readonly ctrl: Int32Array;
  private readonly slots: Float32Array;
  private step = 0;

  private constructor(readonly handle: AllReduceHandle, readonly rank: number) {
    this.ctrl = new Int32Array(handle.sab, 0, 2);
    this.slots = new Float32Array(handle.sab, CONTROL_BYTES, 2 * handle.size * handle.slotFloats);
  }

  /** Shared state for `size` ranks exchanging up to `slotFloats` floats per step. */
  static create(size: number, slotFloats = 1 << 16): ShmAllReduce {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`size must be a positive integer, got ${size}`);
    const sab = new SharedArrayBuffer(CONTROL_BYTES + 2 * size * slotFloats * 4);
    return new ShmAllReduce({ sab, size, slotFloats }, -1);
  }

  /** Rank `rank`'s view (in its worker thread). */
  static attach(handle: AllReduceHandle, rank: number): ShmAllReduce {
    if (!Number.isInteger(rank) || rank < 0 || rank >= handle.size) throw new RangeError(`rank ${rank} outside [0, ${handle.size})`);
    return new ShmAllReduce(handle, rank);
  }

  get size(): number { return this.handle.size; }
  get aborted(): boolean { return Atomics.load(this.ctrl, ABORTED) !== 0; }

  abort(): void {
    Atomics.store(this.ctrl, ABORTED, 1);
    Atomics.notify(this.ctrl, ARRIVALS);
  }

  /** Engine side, with no rank inside a job: clears the arrivals and the abort flag. */
  reset(): void {
    Atomics.store(this.ctrl, ARRIVALS, 0);
    Atomics.store(this.ctrl, ABORTED, 0);
  }

  /** Rank side, on a job marked resetReduce. */
  resetLocal(): void {
    this.step = 0;
  }

  private barrier(): void {
    const target = (this.handle.size * (this.step + 1)) | 0;
    Atomics.add(this.ctrl, ARRIVALS, 1);
    Atomics.notify(this.ctrl, ARRIVALS);
    for (;;) {
      if (this.aborted) throw executorError(ExecutorErrorCode.CHANNEL_CLOSED, `all-reduce aborted (rank ${this.rank}, step ${this.step})`);
      const cur = Atomics.load(this.ctrl, ARRIVALS);
      if (((cur - target) | 0) >= 0) return;
      Atomics.wait(this.ctrl, ARRIVALS, cur, SLICE_MS);
    }
  }

  /** The element-wise sum of `data` over all ranks (every rank must call with the same length). Blocks. */
  sum(data: Float32Array): Float32Array {
    if (this.rank < 0) throw new Error('sum() needs a rank view (ShmAllReduce.attach)');
    const { size, slotFloats } = this.handle;
    const out = new Float32Array(data.length);
    if (size === 1) { out.set(data); return out; }
    for (let off = 0; off < data.length; off += slotFloats) {
      const n = Math.min(slotFloats, data.length - off);
      const bank = (this.step & 1) * size * slotFloats;
      this.slots.set(data.subarray(off, off + n), bank + this.rank * slotFloats);
      this.barrier();
      const dst = out.subarray(off, off + n);
      for (let r = 0; r < size; r++) {
        const src = this.slots.subarray(bank + r * slotFloats, bank + r * slotFloats + n);
        for (let i = 0; i < n; i++) dst[i]! += src[i]!;
      }
      this.step++;
    }
    return out;
  }
}
