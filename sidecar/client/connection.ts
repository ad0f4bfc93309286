/**
 * The client's end of the unix socket to its node's sidecar: request/reply by `rid`, deadlines and
 * AbortSignals enforced locally (the sidecar is told to stop waiting with `cancel`), every pending
 * request rejected with SIDECAR_UNAVAILABLE when the sidecar goes away.
 */
import { connect, type Socket } from 'node:net';
import { SidecarError, errorFromWire } from '../errors.js';
import { writeFrame } from '../../lib/frames.js';
import { DirectFrameReader } from '../../lib/frames-direct-reader.js';
import { WIRE_VERSION, type HelloReply, type Reply } from '../wire/protocol.js';
import { openSegment } from '../shm/segment.js';
import { MAX_TIMER_MS, sleep } from '../../lib/wait.js';
import { currentTraceparent } from '../../lib/telemetry.js';
import { Leases } from './leases.js';
import { logger } from '../../lib/log.js';

const log = logger('sidecar-client');

/** A request waiting for its reply (no per-call closures or timers: this runs for every call). */
interface Pending {
  rid: number;
  msg: Record<string, unknown>;
  resolve(r: Record<string, unknown>): void;
  reject(e: Error): void;
  deadline: number;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

const what = (p: Pending) => `${String(p.msg.op)} ${p.msg.id ?? ''}`;

/** The call is over (replied, given up or the connection closed): stop its abort listener. */
function settle(p: Pending): void {
  if (p.onAbort) p.signal!.removeEventListener('abort', p.onAbort);
}

export interface Deadline {
  deadline: number;
  signal?: AbortSignal | undefined;
}

export class Connection {
  private readonly pending = new Map<number, Pending>();
  private nextRid = 1;
  /** Requests sent with `post` count down from -1: a reply to one (only ever a failure) is told apart from a given-up call's. */
  private nextPostRid = -1;
  /** One timer for every pending call's deadline, armed for the earliest (calls mostly share the default timeout). */
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  alive = true;
  hello!: HelloReply;
  /** The sidecar's shared memory, mapped into this process. */
  segment!: { buffer: ArrayBuffer; bytes: Uint8Array };
  /** Memory the sidecar lent on this connection (given back with `cancel`). */
  readonly leases: Leases;

  private constructor(private readonly sock: Socket, reader: DirectFrameReader<Reply>, leaseIdleMs: number) {
    this.leases = new Leases((alloc) => this.giveBack(alloc), leaseIdleMs);
    reader.attach(sock);
    sock.on('error', () => {});
    sock.on('close', () => {
      this.alive = false;
      this.leases.clear();
      clearTimeout(this.timer);
      const err = new SidecarError('SIDECAR_UNAVAILABLE', 'the connection to the local sidecar closed (sidecar stopped or restarted)');
      for (const p of this.pending.values()) { settle(p); p.reject(err); }
      this.pending.clear();
    });
  }

  /** Connects (retrying while the socket is missing or refused, until the deadline) and says hello. */
  static async open(socketPath: string, hello: { rank: number; group: number[]; hint?: number }, d: Deadline,
    { reuse, leaseIdleMs = 250 }: { reuse?: Connection | undefined; leaseIdleMs?: number } = {}): Promise<Connection> {
    let lastErr = '';
    for (;;) {
      if (d.signal?.aborted) throw new SidecarError('SIDECAR_ABORTED', 'connecting to the sidecar was aborted');
      try {
        // Replies are read with `onread` into one reused buffer, every complete frame of a read parsed at once (a read
        // carries several replies when the sidecar answered several requests in one tick); no buffer is allocated per
        // read. A reply's payload (a small object's bytes) is copied out into a Buffer of its own.
        let conn: Connection | undefined;
        const reader = new DirectFrameReader<Reply>({
          target: () => undefined,
          frame: (r, payload) => conn?.onReply(r, payload),
          error: () => conn?.close(),
        });
        const sock = await new Promise<Socket>((resolve, reject) => {
          const s = connect({ path: socketPath, onread: reader.onread }, () => { s.off('error', reject); resolve(s); });
          s.once('error', reject);
        });
        conn = new Connection(sock, reader, leaseIdleMs);
        try {
          conn.hello = (await conn.call({ op: 'hello', ...hello, wire: WIRE_VERSION }, undefined, d)) as unknown as HelloReply;
          const seg = conn.hello.segment;
          conn.segment = reuse && reuse.hello.segment.path === seg.path ? reuse.segment : openSegment(seg.path, seg.size);
          return conn;
        } catch (err) {
          conn.close();
          throw err;
        }
      } catch (err) {
        if (err instanceof SidecarError && err.code !== 'SIDECAR_UNAVAILABLE') throw err;
        lastErr = (err as Error).message;
      }
      const left = d.deadline - Date.now();
      if (left <= 0) throw new SidecarError('SIDECAR_UNAVAILABLE', `no sidecar at ${socketPath} before the deadline (${lastErr})`);
      await sleep(Math.min(50, left));
    }
  }

  private onReply(r: Reply, payload: Buffer | null): void {
    const p = this.pending.get(r.rid);
    if (!p) { // given up on (deadline/abort; the sidecar was told to cancel), or a request sent without waiting (post)
      if (!r.ok && r.rid < 0) log.warn({ rid: r.rid, err: r.error }, 'a sidecar request sent without waiting for its reply failed');
      return;
    }
    this.pending.delete(r.rid);
    settle(p);
    if (r.ok) {
      if (payload && payload.length > 0) (r as Record<string, unknown>).payload = payload; // r is this reply's own parsed header
      p.resolve(r);
    }
    else p.reject(errorFromWire(r.error));
  }

  /** Gives memory the sidecar reserved for this connection (an allocation or a lease) back; nothing to wait for. */
  giveBack(alloc: number): void {
    if (this.alive) writeFrame(this.sock, { op: 'cancel', rid: alloc });
  }

  /** Stops waiting for `p` (deadline or abort) and tells the sidecar to stop working on it. */
  giveUp(p: Pending, err: SidecarError): void {
    if (!this.pending.delete(p.rid)) return;
    settle(p);
    if (this.alive) writeFrame(this.sock, { op: 'cancel', rid: p.rid });
    p.reject(err);
  }

  /** Sends one request (`msg` is made for this call: its `rid` is set in place) and waits for its reply, until `d.deadline` or `d.signal`. */
  call(msg: Record<string, unknown>, payload: Uint8Array | undefined, d: Deadline): Promise<Record<string, unknown>> {
    if (!this.alive) return Promise.reject(new SidecarError('SIDECAR_UNAVAILABLE', 'the connection to the local sidecar is closed'));
    return new Promise((resolve, reject) => {
      const p: Pending = { rid: this.nextRid++, msg, resolve, reject, deadline: d.deadline, signal: d.signal, onAbort: undefined };
      if (d.signal) {
        p.onAbort = () => this.giveUp(p, new SidecarError('SIDECAR_ABORTED', `${what(p)} was aborted`));
        if (d.signal.aborted) { this.pending.set(p.rid, p); return p.onAbort(); }
        d.signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.pending.set(p.rid, p);
      if (p.deadline < this.timerAt) this.arm(p.deadline);
      const traceparent = currentTraceparent(); // the caller's span (see SidecarClient.traced)
      // `msg` is the caller's own object, made for this call: completed in place rather than copied.
      msg.rid = p.rid;
      if (traceparent) msg.traceparent = traceparent;
      writeFrame(this.sock, msg, payload);
    });
  }

  /**
   * Sends one request without waiting for its reply (the sidecar answers only if it fails: that reply is logged as a
   * warning).
   * Resolves once the frame is handed to the kernel, so any later request on this connection is served after it.
   */
  post(msg: Record<string, unknown>): Promise<void> {
    if (!this.alive) return Promise.reject(new SidecarError('SIDECAR_UNAVAILABLE', 'the connection to the local sidecar is closed'));
    const traceparent = currentTraceparent();
    msg.rid = this.nextPostRid--;
    if (traceparent) msg.traceparent = traceparent;
    return new Promise((resolve, reject) => {
      writeFrame(this.sock, msg, undefined, (err) => {
        if (err) reject(new SidecarError('SIDECAR_UNAVAILABLE', `the connection to the local sidecar closed before ${String(msg.op)} ${String(msg.id ?? '')} was sent`));
        else resolve();
      });
    });
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    // Clamped to setTimeout's range (a longer delay fires after 1 ms); expire() re-arms for what is not yet due.
    this.timer = setTimeout(() => this.expire(), Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now()))).unref();
  }

  /** Gives up on the calls whose deadline passed; re-arms for the earliest one left. */
  private expire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const p of this.pending.values()) {
      if (p.deadline <= now) this.giveUp(p, new SidecarError('SIDECAR_TIMEOUT', `${what(p)} did not complete before the deadline`));
      else next = Math.min(next, p.deadline);
    }
    if (next < Infinity) this.arm(next);
  }

  close(): void {
    this.sock.destroy();
  }
}
