/**
 * A slab: a fixed region of the segment cut into equal slots. An allocation is a contiguous run of slots,
 * found first-fit in a sorted list of free extents (coalesced on free), so fragmentation stays bounded and
 * both operations are O(number of free extents).
 */

export interface Extent {
  start: number; // first slot
  count: number; // number of slots
}

export class Slab {
  private free: Extent[];
  private used = 0; // slots in use

  constructor(readonly base: number, readonly slotBytes: number, readonly slots: number) {
    this.free = slots > 0 ? [{ start: 0, count: slots }] : [];
  }

  get capacity(): number { return this.slots * this.slotBytes; }
  get bytesInUse(): number { return this.used * this.slotBytes; }
  get freeExtents(): number { return this.free.length; }

  slotsFor(bytes: number): number {
    return Math.max(1, Math.ceil(bytes / this.slotBytes));
  }

  /** First slot of a free run of `count` slots, or -1 when no run is long enough. */
  alloc(count: number): number {
    for (let i = 0; i < this.free.length; i++) {
      const e = this.free[i]!;
      if (e.count < count) continue;
      const start = e.start;
      if (e.count === count) this.free.splice(i, 1);
      else { e.start += count; e.count -= count; }
      this.used += count;
      return start;
    }
    return -1;
  }

  release(start: number, count: number): void {
    let i = 0;
    while (i < this.free.length && this.free[i]!.start < start) i++;
    const prev = this.free[i - 1];
    const next = this.free[i];
    if ((prev && prev.start + prev.count > start) || (next && start + count > next.start) || start + count > this.slots) {
      throw new Error(`slab: double free or bad extent ${start}+${count}`);
    }
    this.used -= count;
    if (prev && prev.start + prev.count === start) {
      prev.count += count;
      if (next && prev.start + prev.count === next.start) { prev.count += next.count; this.free.splice(i, 1); }
    } else if (next && start + count === next.start) {
      next.start = start; next.count += count;
    } else {
      this.free.splice(i, 0, { start, count });
    }
  }
}
