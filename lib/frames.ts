/**
 * The framing shared by the client↔sidecar unix socket and the sidecar↔sidecar TCP stream:
 *
 *   u32 LE header length | u32 LE payload length | header (UTF-8 JSON) | payload (raw bytes)
 *
 * The reader lets the receiver choose where a payload lands (e.g. straight into a shared-memory slot,
 * so bytes from the network are copied once) and may take time to choose (a slot allocation waiting
 * under memory pressure): it then pauses the stream, which back-pressures the sender through TCP.
 */
import type { Socket } from 'node:net';

const PREFIX = 8;
/** Bytes before a frame's header: u32 header length, u32 payload length. */
export const FRAME_PREFIX = PREFIX;
/**
 * Payloads up to this size are copied in after the header (one small buffer, cut from Node's pool); larger ones are
 * handed to the socket as they are, beside the header (the same writev). Copying a 4 KiB payload meant allocating a
 * fresh ArrayBuffer per frame (past Node's pool size): measured, allocation and the GC it drove were ~30% of a 4 KiB
 * transfer's client CPU. A payload written by reference must not change until the frame is written: every caller's
 * payload is either immutable (a chunk's bytes held by the sidecar, a slot until its push is written) or a send's
 * data, which the caller keeps until the send resolves — after the sidecar has read it.
 */
const COPY_MAX = 1024;

/**
 * Sockets whose writes are held until the end of this tick, each with the token of the tick callback that releases
 * them (a socket leaves the map at its release: the map holds none past the tick).
 */
const corked = new Map<Socket, object>();

/** Holds `sock`'s writes until the end of this tick, so frames written in one tick leave in one writev. */
function batchThisTick(sock: Socket): void {
  if (corked.has(sock)) return;
  const token = {};
  corked.set(sock, token);
  sock.cork();
  process.nextTick(() => {
    if (corked.get(sock) !== token) return; // flushed early (flushFrames): that released this hold
    corked.delete(sock);
    sock.uncork();
  });
}

/**
 * Sends the frames held for the end of this tick now (one writev per socket): those of `sock`, or with no argument
 * those of every socket of this process. For a caller about to spend a long time in this tick (copying a large payload
 * into shared memory) whose peers should not wait for it — a process that sends and receives holds frames on several
 * connections. Frames written after this are batched again.
 */
export function flushFrames(sock?: Socket): void {
  if (sock) {
    if (corked.delete(sock)) sock.uncork();
    return;
  }
  const held = [...corked.keys()];
  corked.clear();
  for (const s of held) s.uncork();
}

/**
 * Writes one frame. Payloads over COPY_MAX bytes are passed to the socket as they are (no copy in user space: the
 * kernel reads them from their memory, e.g. a shared-memory slot). Frames written in the same tick are
 * sent together (one writev, one wake-up of the reader).
 */
export function writeFrame(sock: Socket, header: unknown, payload?: Uint8Array, written?: (err?: Error | null) => void): boolean {
  const json = JSON.stringify(header);
  const hlen = Buffer.byteLength(json);
  const plen = payload?.byteLength ?? 0;
  const inline = plen <= COPY_MAX;
  const buf = Buffer.allocUnsafe(PREFIX + hlen + (inline ? plen : 0));
  buf.writeUInt32LE(hlen, 0);
  buf.writeUInt32LE(plen, 4);
  buf.write(json, PREFIX, 'utf8');
  if (inline && payload && plen > 0) buf.set(payload, PREFIX + hlen);
  batchThisTick(sock);
  if (inline) return sock.write(buf, written);
  sock.write(buf);
  return sock.write(payload!, written);
}

/**
 * Where a payload goes: a Buffer of exactly the payload's length, `null` to discard it, or undefined to
 * have the reader provide one: a view of the bytes read when they came in one read (no copy; it keeps that read's
 * buffer alive), else a Buffer of its own.
 */
export type PayloadTarget = Buffer | null | undefined;

export interface FrameHandler<H> {
  /** Called when a header is complete; may return a promise (the stream is paused meanwhile). */
  target(header: H, length: number): PayloadTarget | Promise<PayloadTarget>;
  /** Called when the whole frame is in; `payload` is the target (or null when discarded). */
  frame(header: H, payload: Buffer | null): void;
  /** A malformed stream: the connection should be dropped. */
  error(err: Error): void;
}

export class FrameReader<H> {
  private readonly pending: Buffer[] = []; // unread bytes: pending[0] from `at` on, then the others whole
  private at = 0;
  private pendingBytes = 0;
  private header: H | undefined;
  private payloadLen = 0;
  private target: Buffer | null = null;
  private filled = 0;
  private waiting = false; // a target() promise is outstanding
  private inPayload = false;

  constructor(private readonly sock: Socket, private readonly handler: FrameHandler<H>) {
    sock.on('data', (chunk: Buffer) => this.push(chunk));
  }

  private push(chunk: Buffer): void {
    let from = 0;
    if (this.inPayload && !this.waiting && this.pendingBytes === 0) {
      from = this.fill(chunk, 0);
      if (from === chunk.length) return;
    }
    if (this.pendingBytes === 0) { this.pending.length = 0; this.at = from; } // start over at this chunk
    this.pending.push(chunk);
    this.pendingBytes += chunk.length - from;
    this.drain();
  }

  /** Copies payload bytes from `chunk[at..]`; returns the index after what was consumed. */
  private fill(chunk: Buffer, at: number): number {
    const n = Math.min(this.payloadLen - this.filled, chunk.length - at);
    if (this.target) chunk.copy(this.target, this.filled, at, at + n);
    this.filled += n;
    if (this.filled === this.payloadLen) this.finish();
    return at + n;
  }

  private finish(): void {
    const h = this.header as H;
    const t = this.target;
    this.inPayload = false;
    this.header = undefined;
    this.target = null;
    this.handler.frame(h, t);
  }

  /** Drops the first `n` unread bytes. */
  private skip(n: number): void {
    this.pendingBytes -= n;
    while (n > 0) {
      const left = this.pending[0]!.length - this.at;
      if (n < left) { this.at += n; return; }
      n -= left;
      this.pending.shift();
      this.at = 0;
    }
  }

  /** The first `n` unread bytes in one buffer, and where they start in it (no copy unless they span chunks). */
  private peek(n: number): [Buffer, number] {
    const first = this.pending[0]!;
    if (first.length - this.at >= n) return [first, this.at];
    const out = Buffer.allocUnsafe(n);
    for (let i = 0, o = 0, off = this.at; o < n; i++, off = 0) {
      const b = this.pending[i]!;
      const k = Math.min(n - o, b.length - off);
      b.copy(out, o, off, off + k);
      o += k;
    }
    return [out, 0];
  }

  private drain(): void {
    while (!this.waiting) {
      if (this.inPayload) {
        if (this.pendingBytes === 0) return;
        const at = this.at;
        this.skip(this.fill(this.pending[0]!, at) - at);
        continue;
      }
      if (this.pendingBytes < PREFIX) return;
      const [pre, p] = this.peek(PREFIX);
      const hlen = pre.readUInt32LE(p);
      const plen = pre.readUInt32LE(p + 4);
      if (this.pendingBytes < PREFIX + hlen) return;
      this.skip(PREFIX);
      const [hb, h] = this.peek(hlen);
      let header: H;
      try {
        header = JSON.parse(hb.toString('utf8', h, h + hlen)) as H;
      } catch (err) {
        this.handler.error(new Error(`malformed frame header: ${(err as Error).message}`));
        this.sock.destroy();
        return;
      }
      this.skip(hlen);
      this.header = header;
      this.payloadLen = plen;
      this.filled = 0;
      this.inPayload = true;
      const t = this.handler.target(header, plen);
      if (t === undefined && plen > 0 && this.pendingBytes >= plen && this.pending[0]!.length - this.at >= plen) { // all in one read: a view, no copy
        this.target = this.pending[0]!.subarray(this.at, this.at + plen);
        this.skip(plen);
        this.filled = plen;
        this.finish();
        continue;
      }
      if (t instanceof Promise) {
        this.waiting = true;
        this.sock.pause();
        t.then((buf) => this.setTarget(buf, plen), (err: Error) => { this.handler.error(err); this.setTarget(null, plen); })
          .finally(() => { this.waiting = false; this.sock.resume(); this.drain(); });
        return;
      }
      this.setTarget(t, plen);
    }
  }

  private setTarget(t: PayloadTarget, plen: number): void {
    this.target = t === undefined ? (plen > 0 ? Buffer.allocUnsafe(plen) : Buffer.alloc(0)) : t;
    if (this.target && this.target.length !== plen) {
      this.handler.error(new Error(`payload target has ${this.target.length} bytes, frame has ${plen}`));
      this.target = null;
    }
    if (plen === 0) this.finish();
  }
}
