/**
 * A single-producer single-consumer message pipe over a SharedArrayBuffer (engine thread ↔ one worker
 * thread). Messages are lists of byte parts of any total size: a message larger than the ring streams
 * through it in pieces, so the ring bounds memory, not message size.
 *
 * Layout: Int32 control words [written, read, closed] (byte counters mod 2^32), then `capacity` data bytes.
 * Message framing: u32 part count, u32 length per part, then each part padded to 8 bytes (so the reader can
 * hand out aligned typed-array views over one fresh buffer: one copy in, one copy out).
 *
 * Waiting: `Atomics.wait` (blocking, for threads that have nothing else to do) or `Atomics.waitAsync`
 * (keeps the event loop running: the engine's ZeroMQ sockets, a worker's sidecar connection). `close()`
 * wakes every waiter on both sides with EXECUTOR_CHANNEL_CLOSED.
 */
import { ExecutorErrorCode, executorError } from '../../lib/executor-errors.js';

const WRITTEN = 0;
const READ = 1;
const CLOSED = 2;
const CONTROL_BYTES = 64;
const ALIGN = 8;
/** Waits are sliced so a lost wake-up (a peer that died without closing) is noticed within this time. */
const SLICE_MS = 250;

interface Wait { index: number; value: number }

const pad = (n: number) => (n + ALIGN - 1) & ~(ALIGN - 1);

type WaitAsync = (a: Int32Array, i: number, v: number, t?: number) => { async: boolean; value: Promise<string> | string };
const waitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;

export class ShmRing {
  private readonly ctrl: Int32Array;
  private readonly data: Uint8Array;
  readonly capacity: number;
  private writeChain: Promise<unknown> = Promise.resolve();

  private constructor(readonly sab: SharedArrayBuffer) {
    this.ctrl = new Int32Array(sab, 0, 3);
    this.data = new Uint8Array(sab, CONTROL_BYTES);
    this.capacity = this.data.length;
  }

  /** A new ring with `capacity` data bytes: a power of two (so positions survive the counters' wrap at 2^32) in [64, 2^30]. */
  static create(capacity: number): ShmRing {
    if (!Number.isInteger(capacity) || capacity < 64 || capacity > 2 ** 30 || (capacity & (capacity - 1)) !== 0) {
      throw new RangeError(`ring capacity must be a power of two in [64, 2^30], got ${capacity}`);
    }
    return new ShmRing(new SharedArrayBuffer(CONTROL_BYTES + capacity));
  }

  /** The same ring seen from another thread (pass `ring.sab` through workerData). */
  static attach(sab: SharedArrayBuffer): ShmRing {
    return new ShmRing(sab);
  }

  get closed(): boolean { return Atomics.load(this.ctrl, CLOSED) !== 0; }

  /** Closes both directions: every waiting or later read/write fails with EXECUTOR_CHANNEL_CLOSED. */
  close(): void {
    Atomics.store(this.ctrl, CLOSED, 1);
    Atomics.notify(this.ctrl, WRITTEN);
    Atomics.notify(this.ctrl, READ);
  }

  /** Bytes written and not yet read. */
  get pending(): number { return (Atomics.load(this.ctrl, WRITTEN) - Atomics.load(this.ctrl, READ)) >>> 0; }

  // ---------- byte transfer (one step each; a Wait when nothing can move) ----------

  private checkOpen(): void {
    if (this.closed) throw executorError(ExecutorErrorCode.CHANNEL_CLOSED, 'the shared-memory ring was closed');
  }

  private *put(src: Uint8Array): Generator<Wait, void> {
    let off = 0;
    while (off < src.length) {
      this.checkOpen();
      const w = Atomics.load(this.ctrl, WRITTEN);
      const r = Atomics.load(this.ctrl, READ);
      const free = this.capacity - ((w - r) >>> 0);
      if (free === 0) {
        Atomics.notify(this.ctrl, WRITTEN); // let the reader drain what is there before we wait
        yield { index: READ, value: r };
        continue;
      }
      const at = (w >>> 0) % this.capacity;
      const n = Math.min(free, src.length - off, this.capacity - at);
      this.data.set(src.subarray(off, off + n), at);
      off += n;
      Atomics.store(this.ctrl, WRITTEN, (w + n) | 0);
    }
  }

  private *take(dst: Uint8Array): Generator<Wait, void> {
    let off = 0;
    while (off < dst.length) {
      this.checkOpen();
      const w = Atomics.load(this.ctrl, WRITTEN);
      const r = Atomics.load(this.ctrl, READ);
      const avail = (w - r) >>> 0;
      if (avail === 0) {
        Atomics.notify(this.ctrl, READ); // let the writer refill before we wait
        yield { index: WRITTEN, value: w };
        continue;
      }
      const at = (r >>> 0) % this.capacity;
      const n = Math.min(avail, dst.length - off, this.capacity - at);
      dst.set(this.data.subarray(at, at + n), off);
      off += n;
      Atomics.store(this.ctrl, READ, (r + n) | 0);
    }
  }

  private *writeMessage(parts: readonly Uint8Array[]): Generator<Wait, void> {
    const head = new Uint32Array(1 + parts.length);
    head[0] = parts.length;
    parts.forEach((p, i) => { head[i + 1] = p.byteLength; });
    yield* this.put(new Uint8Array(head.buffer));
    const zeros = new Uint8Array(ALIGN);
    for (const p of parts) {
      yield* this.put(p);
      const extra = pad(p.byteLength) - p.byteLength;
      if (extra) yield* this.put(zeros.subarray(0, extra));
    }
    Atomics.notify(this.ctrl, WRITTEN); // waiters are woken once per message, not per piece
  }

  private *readMessage(): Generator<Wait, Uint8Array[]> {
    const count = new Uint32Array(1);
    yield* this.take(new Uint8Array(count.buffer));
    const lens = new Uint32Array(count[0]!);
    yield* this.take(new Uint8Array(lens.buffer));
    const total = lens.reduce((a, n) => a + pad(n), 0);
    const body = new Uint8Array(total);
    yield* this.take(body);
    const parts: Uint8Array[] = [];
    let off = 0;
    for (const n of lens) { parts.push(body.subarray(off, off + n)); off += pad(n); }
    Atomics.notify(this.ctrl, READ);
    return parts;
  }

  // ---------- drivers ----------

  private runSync<T>(gen: Generator<Wait, T>): T {
    for (let step = gen.next(); ; step = gen.next()) {
      if (step.done) return step.value;
      Atomics.wait(this.ctrl, step.value.index, step.value.value, SLICE_MS);
    }
  }

  private async runAsync<T>(gen: Generator<Wait, T>): Promise<T> {
    for (let step = gen.next(); ; step = gen.next()) {
      if (step.done) return step.value;
      const r = waitAsync(this.ctrl, step.value.index, step.value.value, SLICE_MS);
      if (!r.async) continue;
      // A pending Atomics.waitAsync does not keep a thread alive; a waiting read or write should, like a socket.
      const keepAlive = setTimeout(() => undefined, SLICE_MS * 2);
      await r.value;
      clearTimeout(keepAlive);
    }
  }

  /** Writes one message, blocking the thread while the ring is full. */
  writeSync(parts: readonly Uint8Array[]): void {
    this.runSync(this.writeMessage(parts));
  }

  /** Writes one message without blocking the event loop; concurrent calls are written one after another. */
  write(parts: readonly Uint8Array[]): Promise<void> {
    const p = this.writeChain.then(() => this.runAsync(this.writeMessage(parts)));
    this.writeChain = p.catch(() => undefined);
    return p;
  }

  /** Reads one message, blocking the thread while the ring is empty. */
  readSync(): Uint8Array[] {
    return this.runSync(this.readMessage());
  }

  /**
   * Blocks the thread until data is pending or `timeoutMs` passed; true when there is data. A worker thread
   * idles here between jobs (waking takes microseconds, where Atomics.waitAsync takes a tick of the loop),
   * returning to its event loop at least every `timeoutMs`.
   */
  waitForData(timeoutMs: number): boolean {
    const end = Date.now() + timeoutMs;
    for (;;) {
      this.checkOpen();
      const w = Atomics.load(this.ctrl, WRITTEN);
      if (w !== Atomics.load(this.ctrl, READ)) return true;
      const left = end - Date.now();
      if (left <= 0) return false;
      Atomics.wait(this.ctrl, WRITTEN, w, Math.min(left, SLICE_MS));
    }
  }

  /** Reads one message without blocking the event loop (one reader at a time). */
  read(): Promise<Uint8Array[]> {
    return this.runAsync(this.readMessage());
  }
}
