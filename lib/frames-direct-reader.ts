/**
 * A frame reader (same framing as frames.ts) whose large payloads are written by the kernel straight to where the
 * receiver wants them — e.g. a shared-memory slot. It drives the socket's `onread` option:
 *  - prefixes, headers and small payloads are read into a staging buffer (64 KiB), many frames per read: a peer's
 *    coalesced small frames (chunks of small objects, closes, fails) cost one read together, not three reads each;
 *  - the rest of a payload of at least 16 KiB whose staged part was copied out is read straight into its target,
 *    exactly that rest: chunk bytes go from the socket into shared memory with no user-space copy (only the part that
 *    came in the same read as the header, ≤ 64 KiB — ≤ 4 KiB right after such a payload — is copied from the staging
 *    buffer). No buffer is allocated per read;
 *  - given a way to set the socket's receive low-water mark, a payload rest that is not all queued yet is read in one
 *    wake-up once it is, not in one read per burst of segments (fewer reads, and fewer wake-ups the sender pays for).
 *
 *   const reader = new DirectFrameReader(handler);
 *   const sock = connect({ host, port, onread: reader.onread });
 *   reader.attach(sock);
 *
 * Node only takes `onread` for sockets this process creates (`net.connect`), not for accepted ones:
 * the side of a link that reads payloads this way must be the side that dials.
 *
 * While `handler.target()` is pending (a slot waiting for memory) reading stops, so TCP back-pressures the
 * sender; bytes already staged wait there. Node decides the buffer of the read after a stop before the target is
 * known, so that one read goes into a 1-byte probe whose byte is then staged.
 */
import type { Socket } from 'node:net';
import { FRAME_PREFIX as PREFIX, type FrameHandler, type PayloadTarget } from './frames.js';

const MAX_HEADER = 1024 * 1024;
const STAGE_BYTES = 64 * 1024;
/** A payload rest at least this large is read straight into its target; a smaller one through the staging buffer. */
const DIRECT_MIN = 16 * 1024;
/**
 * The staging read right after a payload that was read straight into its target takes at most this much: the next
 * frame is likely another large one, and every byte of its payload that a full 64 KiB staging read brought in along
 * with its header would be copied once more out of the staging buffer (up to 6% of a 1 MiB chunk's bytes). Enough
 * for a prefix and a chunk header; a header that does not fit takes a further read.
 */
const AFTER_DIRECT_READ = 4 * 1024;
/**
 * The highest receive low-water mark asked for (DirectReadOptions.lowWater): a larger payload's rest is waited for in
 * parts of this size, so the receiver's copies keep overlapping the sender's writes (the kernel also caps the mark at
 * half the socket's largest receive buffer). Measured between sidecars: a 1 MiB chunk gained only when its whole rest
 * was one part (a 256 KiB cap gained nothing); 16 MiB chunks ran slower with a 4 MiB cap, faster with 1 MiB or 512 KiB.
 */
const LOW_WATER_MAX = 1024 * 1024;

type Part = 'prefix' | 'header' | 'payload';

export interface OnRead {
  buffer: () => Uint8Array;
  callback: (bytes: number, buf: Uint8Array) => boolean;
}

export interface DirectReadOptions {
  /**
   * Sets the socket's receive low-water mark (SO_RCVLOWAT): the process is woken only once this many bytes are queued.
   * Given, the reader sets it to the rest of a payload it reads straight into its target (so the rest comes in one
   * wake-up and one read, not one per segment burst) and back to 1 when that payload is in.
   */
  lowWater?: (bytes: number) => void;
}

export class DirectFrameReader<H> {
  /** Pass as `net.connect({..., onread})`. */
  readonly onread: OnRead;
  private sock: Socket | undefined;
  private readonly probe = Buffer.alloc(1);
  private stage = Buffer.allocUnsafe(STAGE_BYTES);
  private from = 0; // staged bytes not parsed yet: stage[from, to)
  private to = 0;
  private part: Part = 'prefix';
  private hlen = 0;
  private plen = 0;
  private filled = 0; // payload bytes in place
  private header: H | undefined;
  private target: Buffer | null = null;
  private waiting = false;
  private afterDirect = false; // the last payload was read straight into its target: keep the next staging read short
  private lowWater = 1; // the socket's receive low-water mark as last set

  constructor(private readonly handler: FrameHandler<H>, private readonly opts: DirectReadOptions = {}) {
    this.onread = {
      buffer: () => this.next(),
      callback: (n, buf) => {
        const go = this.got(n, buf);
        if (this.opts.lowWater) this.setLowWater(n < buf.byteLength);
        return go;
      },
    };
  }

  /**
   * After a read: when it came back short (libuv waits for the socket next) in the middle of a payload read straight
   * into its target, the next wake-up should come once the rest is queued; anywhere else, at the first byte.
   */
  private setLowWater(short: boolean): void {
    const rest = this.plen - this.filled;
    const direct = this.part === 'payload' && this.target !== null && !this.waiting && this.from === this.to && rest >= DIRECT_MIN;
    const want = !direct ? 1 : short ? Math.min(rest, LOW_WATER_MAX) : this.lowWater;
    if (want === this.lowWater) return;
    this.lowWater = want;
    this.opts.lowWater!(want);
  }

  attach(sock: Socket): void { this.sock = sock; }

  /** Where the next read goes. */
  private next(): Uint8Array {
    if (this.waiting) return this.probe;
    if (this.part === 'payload' && this.target && this.from === this.to && this.plen - this.filled >= DIRECT_MIN) {
      return this.target.subarray(this.filled);
    }
    this.room(this.part === 'header' ? this.hlen : PREFIX);
    if (!this.afterDirect) return this.stage.subarray(this.to);
    this.afterDirect = false;
    return this.stage.subarray(this.to, Math.min(this.stage.length, this.to + AFTER_DIRECT_READ));
  }

  /** Makes room after the staged bytes, keeping `need` bytes from `from` contiguous (the header being read). */
  private room(need: number): void {
    if (this.from === this.to) { this.from = this.to = 0; }
    if (this.to < this.stage.length && this.stage.length - this.from >= need) return;
    const size = Math.max(this.stage.length, need, this.to - this.from + 1);
    const stage = size > this.stage.length ? Buffer.allocUnsafe(size) : this.stage;
    this.stage.copy(stage, 0, this.from, this.to);
    this.stage = stage;
    this.to -= this.from;
    this.from = 0;
  }

  /** `n` bytes were read into `buf`; returns false to stop reading. */
  private got(n: number, buf: Uint8Array): boolean {
    if (buf === this.probe) { // the one read after a stop: its byte follows the staged ones
      this.room(1);
      this.stage[this.to++] = this.probe[0]!;
    } else if (buf.buffer === this.stage.buffer) {
      this.to += n;
    } else { // straight into the target
      this.filled += n;
      if (this.filled === this.plen) { this.afterDirect = true; this.finish(); }
    }
    return this.parse();
  }

  /** Parses what is staged: as many frames as are complete. Returns false to stop reading (a target pending, or failed). */
  private parse(): boolean {
    for (;;) {
      if (this.waiting) return false;
      const avail = this.to - this.from;
      switch (this.part) {
        case 'prefix': {
          if (avail < PREFIX) return true;
          this.hlen = this.stage.readUInt32LE(this.from);
          this.plen = this.stage.readUInt32LE(this.from + 4);
          if (this.hlen === 0 || this.hlen > MAX_HEADER) return this.fail(new Error(`malformed frame: header length ${this.hlen}`));
          this.from += PREFIX;
          this.part = 'header';
          continue;
        }
        case 'header': {
          if (avail < this.hlen) return true;
          try {
            this.header = JSON.parse(this.stage.toString('utf8', this.from, this.from + this.hlen)) as H;
          } catch (err) {
            return this.fail(new Error(`malformed frame header: ${(err as Error).message}`));
          }
          this.from += this.hlen;
          this.part = 'payload';
          this.filled = 0;
          const t = this.handler.target(this.header, this.plen);
          if (!(t instanceof Promise)) { this.setTarget(t); continue; }
          this.waiting = true;
          t.then((b) => this.setTarget(b), (err: Error) => { this.handler.error(err); this.setTarget(null); })
            .finally(() => {
              this.waiting = false;
              if (this.parse() && this.sock && !this.sock.destroyed) this.sock.resume();
            });
          return false;
        }
        case 'payload': {
          const k = Math.min(avail, this.plen - this.filled);
          if (k > 0 && this.target) this.stage.copy(this.target, this.filled, this.from, this.from + k);
          this.from += k;
          this.filled += k;
          if (this.filled < this.plen) return true;
          this.finish();
          continue;
        }
      }
    }
  }

  private setTarget(t: PayloadTarget): void {
    const plen = this.plen;
    this.target = t === undefined ? Buffer.allocUnsafe(plen) : t;
    if (this.target && this.target.length !== plen) {
      this.handler.error(new Error(`payload target has ${this.target.length} bytes, frame has ${plen}`));
      this.target = null;
    }
  }

  private finish(): void {
    const h = this.header as H;
    const t = this.target;
    this.part = 'prefix';
    this.filled = 0;
    this.header = undefined;
    this.target = null;
    this.handler.frame(h, t);
  }

  private fail(err: Error): false {
    this.handler.error(err);
    this.sock?.destroy();
    return false;
  }
}
