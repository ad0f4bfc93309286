/**
 * The sidecar's shared memory: one segment cut into preallocated slabs of fixed-size slots.
 * An allocation picks the slab whose slot size best matches the size (or the client's memory hint),
 * falls back to the other slabs, and otherwise waits in FIFO order until memory is freed
 * (back-pressure: never dropped), failing with SIDECAR_TIMEOUT at its deadline.
 */
import { SidecarError } from '../errors.js';
import type { Cancellable } from '../cancel.js';
import { Slab } from './slab.js';
import { createSegment, type Segment } from './segment.js';
import { deadlineTimer } from '../../lib/wait.js';

export interface SlabSpec {
  slotBytes: number; // multiple of 64 (keeps every typed-array view aligned)
  slots: number;
}

export interface Allocation {
  readonly slab: number;
  readonly start: number; // first slot
  readonly count: number; // slots
  readonly offset: number; // byte offset in the segment
  readonly length: number; // bytes requested
  readonly reserved: number; // bytes held (whole slots)
}

export interface AllocOptions {
  deadline: number; // epoch ms
  signal?: Cancellable;
  hint?: number; // bytes per row the client expects: picks the slab
}

interface Waiter {
  size: number;
  hint: number | undefined;
  resolve(a: Allocation): void;
  reject(e: Error): void;
  cleanup(): void;
}

export class SharedMemory {
  readonly segment: Segment;
  private readonly slabs: Slab[];
  private readonly waiters: Waiter[] = [];
  private readonly maxSlab: number;
  private readonly bySlotAsc: number[]; // slab indices by slot size, smallest first (ties: lower index first)
  private readonly bySlotDesc: number[]; // largest first (ties: lower index first)
  /** Called each time an allocation has to wait for memory. */
  onWait: (size: number) => void = () => {};

  constructor(node: string, specs: SlabSpec[]) {
    if (specs.length === 0) throw new SidecarError('SIDECAR_BAD_REQUEST', 'at least one slab is required');
    let base = 0;
    this.slabs = specs.map((s) => {
      if (s.slotBytes <= 0 || s.slotBytes % 64 !== 0) throw new SidecarError('SIDECAR_BAD_REQUEST', `slot size ${s.slotBytes} must be a positive multiple of 64`);
      const slab = new Slab(base, s.slotBytes, s.slots);
      base += s.slotBytes * s.slots;
      return slab;
    });
    this.maxSlab = Math.max(...this.slabs.map((s) => s.capacity));
    const idx = this.slabs.map((_, i) => i);
    this.bySlotAsc = [...idx].sort((a, b) => this.slabs[a]!.slotBytes - this.slabs[b]!.slotBytes);
    this.bySlotDesc = [...idx].sort((a, b) => this.slabs[b]!.slotBytes - this.slabs[a]!.slotBytes);
    this.segment = createSegment(node, base);
  }

  get capacity(): number { return this.segment.size; }
  get bytesInUse(): number { return this.slabs.reduce((a, s) => a + s.bytesInUse, 0); }
  get bytesFree(): number { return this.capacity - this.bytesInUse; }
  get waiting(): number { return this.waiters.length; }

  /** Slabs in order of preference for `size` bytes: best-matching slot size first. */
  private order(size: number, hint?: number): number[] {
    const target = Math.max(size, hint ?? 0);
    const below = this.bySlotDesc.filter((i) => this.slabs[i]!.slotBytes <= target);
    const above = this.bySlotAsc.filter((i) => this.slabs[i]!.slotBytes > target);
    return [...below, ...above];
  }

  tryAlloc(size: number, hint?: number): Allocation | undefined {
    for (const i of this.order(size, hint)) {
      const slab = this.slabs[i]!;
      const count = slab.slotsFor(size);
      if (count > slab.slots) continue;
      const start = slab.alloc(count);
      if (start < 0) continue;
      return { slab: i, start, count, offset: slab.base + start * slab.slotBytes, length: size, reserved: count * slab.slotBytes };
    }
    return undefined;
  }

  /** An allocation of `size` bytes if one is free right now and nobody is queued before it. */
  allocNow(size: number, hint?: number): Allocation | undefined {
    return this.waiters.length === 0 && size <= this.maxSlab ? this.tryAlloc(size, hint) : undefined;
  }

  /** Allocates `size` bytes, waiting (FIFO) under memory pressure until `deadline`. */
  alloc(size: number, opts: AllocOptions): Promise<Allocation> {
    if (size > this.maxSlab) {
      return Promise.reject(new SidecarError('SIDECAR_TOO_LARGE', `${size} bytes can never fit: the largest slab holds ${this.maxSlab} bytes`));
    }
    if (this.waiters.length === 0) {
      const a = this.tryAlloc(size, opts.hint);
      if (a) return Promise.resolve(a);
    }
    this.onWait(size);
    return new Promise<Allocation>((resolve, reject) => {
      const fail = (e: Error) => { w.cleanup(); this.remove(w); reject(e); };
      const timer = deadlineTimer(opts.deadline, () => fail(new SidecarError('SIDECAR_TIMEOUT',
        `no shared memory for ${size} bytes before the deadline (${this.bytesInUse} of ${this.capacity} bytes in use, ${this.waiters.length} waiting)`)));
      const onAbort = () => fail(new SidecarError('SIDECAR_ABORTED', `allocation of ${size} bytes aborted`));
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      const w: Waiter = {
        size, hint: opts.hint, resolve, reject,
        cleanup: () => { timer.clear(); opts.signal?.removeEventListener('abort', onAbort); },
      };
      if (opts.signal?.aborted) return onAbort();
      this.waiters.push(w);
    });
  }

  private remove(w: Waiter): void {
    const i = this.waiters.indexOf(w);
    if (i >= 0) this.waiters.splice(i, 1);
    if (i === 0) this.serveWaiters(); // the head left: the next one may fit now
  }

  /** The first slots of `a` holding `size` bytes (≤ a.reserved); the slots past them are freed. */
  trim(a: Allocation, size: number): Allocation {
    const slab = this.slabs[a.slab]!;
    const count = slab.slotsFor(size);
    if (size > a.reserved) throw new SidecarError('SIDECAR_BAD_REQUEST', `${size} bytes do not fit an allocation of ${a.reserved} bytes`);
    if (count < a.count) {
      slab.release(a.start + count, a.count - count);
      this.serveWaiters();
    }
    return { ...a, count, length: size, reserved: count * slab.slotBytes };
  }

  free(a: Allocation): void {
    this.slabs[a.slab]!.release(a.start, a.count);
    this.serveWaiters();
  }

  private serveWaiters(): void {
    while (this.waiters.length > 0) {
      const w = this.waiters[0]!;
      const a = this.tryAlloc(w.size, w.hint);
      if (!a) return; // strict FIFO: a large waiter is not starved by small ones
      this.waiters.shift();
      w.cleanup();
      w.resolve(a);
    }
  }

  /** A Buffer view of an allocation's bytes (no copy). */
  view(a: { offset: number; length: number }): Buffer {
    return Buffer.from(this.segment.buffer, a.offset, a.length);
  }

  /** Rejects every waiter and unlinks the segment. */
  close(): void {
    for (const w of this.waiters.splice(0)) {
      w.cleanup();
      w.reject(new SidecarError('SIDECAR_UNAVAILABLE', 'the sidecar is stopping'));
    }
    this.segment.unlink();
  }
}
