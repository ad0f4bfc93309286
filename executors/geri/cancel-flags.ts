/**
 * Cancellation of running items, shared by Geri's engine and its worker thread: a SharedArrayBuffer of Int32
 * slots (the common protocol has no engine → worker cancel). The engine claims a slot for every item it sends
 * to the worker (`meta.cancelSlot`) and raises it when the request is cancelled (client gone, deadline); the
 * worker looks at the flag between audio chunks and before each image, and stops that item. Slots are reused
 * round-robin, so more than `slots` items must never run at once (the engine caps its batches below that).
 */
export const CANCEL_SLOTS = 4096;

export class CancelFlags {
  private next = 0;
  private readonly flags: Int32Array;

  private constructor(readonly sab: SharedArrayBuffer) {
    this.flags = new Int32Array(sab);
  }

  static create(slots = CANCEL_SLOTS): CancelFlags {
    return new CancelFlags(new SharedArrayBuffer(slots * Int32Array.BYTES_PER_ELEMENT));
  }

  static attach(sab: SharedArrayBuffer): CancelFlags {
    return new CancelFlags(sab);
  }

  get slots(): number { return this.flags.length; }

  /** Engine: a cleared slot for an item about to run. */
  claim(): number {
    const slot = this.next;
    this.next = (this.next + 1) % this.flags.length;
    Atomics.store(this.flags, slot, 0);
    return slot;
  }

  /** Engine: the item in `slot` should stop. */
  cancel(slot: number): void {
    Atomics.store(this.flags, slot, 1);
  }

  /** Worker: whether the item in `slot` was cancelled (false for an item without a slot). */
  cancelled(slot: number | undefined): boolean {
    return slot !== undefined && Atomics.load(this.flags, slot) === 1;
  }
}
