/**
 * A frame reader (same framing as frames.ts) whose payload bytes are written by the kernel straight to
 * where the receiver wants them — e.g. a shared-memory slot. It drives the socket's `onread` option:
 * the buffer it hands to each read is exactly the rest of the part being read (the 8-byte prefix, the
 * header, or the rest of the payload target), so a read never takes more than that part, nothing is
 * copied in user space and no buffer is allocated per read.
 *
 *   const reader = new DirectFrameReader(handler);
 *   const sock = connect({ host, port, onread: reader.onread });
 *   reader.attach(sock);
 *
 * Node only takes `onread` for sockets this process creates (`net.connect`), not for accepted ones:
 * the side of a link that reads payloads this way must be the side that dials.
 *
 * While `handler.target()` is pending (a slot waiting for memory) reading stops, so TCP back-pressures the
 * sender. Node decides the buffer of the read after a stop before the target is known, so that one read
 * goes into a 1-byte probe whose byte is then put in its place.
 */
import type { Socket } from 'node:net';
import { FRAME_PREFIX as PREFIX, type FrameHandler, type PayloadTarget } from './frames.js';

const MAX_HEADER = 1024 * 1024;
const DISCARD_BYTES = 256 * 1024;

type Part = 'prefix' | 'header' | 'payload';

export interface OnRead {
  buffer: () => Uint8Array;
  callback: (bytes: number, buf: Uint8Array) => boolean;
}

export class DirectFrameReader<H> {
  /** Pass as `net.connect({..., onread})`. */
  readonly onread: OnRead;
  private sock: Socket | undefined;
  private readonly prefix = Buffer.alloc(PREFIX);
  private readonly probe = Buffer.alloc(1);
  private headerBuf = Buffer.allocUnsafe(4096);
  private discardBuf: Buffer | undefined;
  private part: Part = 'prefix';
  private filled = 0;
  private hlen = 0;
  private plen = 0;
  private header: H | undefined;
  private target: Buffer | null = null;
  private waiting = false;

  constructor(private readonly handler: FrameHandler<H>) {
    this.onread = { buffer: () => this.next(), callback: (n, buf) => this.got(n, buf) };
  }

  attach(sock: Socket): void { this.sock = sock; }

  /** Where the next read goes. */
  private next(): Uint8Array {
    if (this.waiting) return this.probe;
    switch (this.part) {
      case 'prefix': return this.prefix.subarray(this.filled);
      case 'header': return this.headerBuf.subarray(this.filled, this.hlen);
      case 'payload': {
        if (this.target) return this.target.subarray(this.filled);
        this.discardBuf ??= Buffer.allocUnsafe(DISCARD_BYTES);
        return this.discardBuf.subarray(0, Math.min(DISCARD_BYTES, this.plen - this.filled));
      }
    }
  }

  /** `n` bytes were read into `buf`; returns false to stop reading. */
  private got(n: number, buf: Uint8Array): boolean {
    if (buf === this.probe) this.next()[0] = this.probe[0]!; // the one read after a stop: put its byte in place
    this.filled += n;
    switch (this.part) {
      case 'prefix': {
        if (this.filled < PREFIX) return true;
        this.hlen = this.prefix.readUInt32LE(0);
        this.plen = this.prefix.readUInt32LE(4);
        if (this.hlen === 0 || this.hlen > MAX_HEADER) return this.fail(new Error(`malformed frame: header length ${this.hlen}`));
        if (this.headerBuf.length < this.hlen) this.headerBuf = Buffer.allocUnsafe(this.hlen);
        this.part = 'header';
        this.filled = 0;
        return true;
      }
      case 'header': {
        if (this.filled < this.hlen) return true;
        try {
          this.header = JSON.parse(this.headerBuf.toString('utf8', 0, this.hlen)) as H;
        } catch (err) {
          return this.fail(new Error(`malformed frame header: ${(err as Error).message}`));
        }
        this.part = 'payload';
        this.filled = 0;
        const t = this.handler.target(this.header, this.plen);
        if (!(t instanceof Promise)) return this.setTarget(t);
        this.waiting = true;
        t.then((b) => this.setTarget(b), (err: Error) => { this.handler.error(err); this.setTarget(null); })
          .finally(() => { this.waiting = false; if (this.sock && !this.sock.destroyed) this.sock.resume(); });
        return false;
      }
      case 'payload':
        if (this.filled === this.plen) this.finish();
        return true;
    }
  }

  private setTarget(t: PayloadTarget): true {
    const plen = this.plen;
    this.target = t === undefined ? Buffer.allocUnsafe(plen) : t;
    if (this.target && this.target.length !== plen) {
      this.handler.error(new Error(`payload target has ${this.target.length} bytes, frame has ${plen}`));
      this.target = null;
    }
    if (plen === 0) this.finish();
    return true;
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
