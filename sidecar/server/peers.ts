/**
 * Sidecar ↔ sidecar links over TCP. Bytes flow from the side that accepted a connection to the side that
 * dialed it: every sidecar dials each of its peers (and re-dials after a drop) and reads what that peer sends
 * it with a DirectFrameReader, so the kernel copies chunk bytes from the socket straight into a slot of its
 * own shared memory (Node only gives `onread` buffers to sockets it dials). A peer writes its chunks to this
 * node on the connection it accepted from it, straight from its own shared memory (one writev per chunk).
 * One link per direction; order on a link is preserved, so a `close` never overtakes a chunk.
 *
 * The receiver dials the sender: a fixed peer (`--peer`) is dialed at start; a peer found through the Store is
 * dialed when a local recv waits for a chunk it holds (server.ts, finder.ts). A sender queues what it has for a
 * node until that node dials in (or the frame's deadline passes), so it never needs the receiver's address.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { Logger } from '../../lib/log.js';
import { FrameReader, writeFrame, type PayloadTarget } from '../../lib/frames.js';
import { DirectFrameReader } from '../../lib/frames-direct-reader.js';
import { receiveLowWaterSetter } from '../shm/native.js';
import { PeerHello, parsePeerMessage, type PeerMessage, type PeerChunk } from '../wire/protocol.js';

export interface PeerAddress {
  node: string;
  host: string;
  port: number;
  ranks: number[];
}

export interface InboundHandler {
  /** Where to put an incoming chunk's bytes (may wait for memory); null discards them. */
  target(msg: PeerChunk, from: string): PayloadTarget | Promise<PayloadTarget>;
  message(msg: PeerMessage, payload: Buffer | null, from: string): void;
  /** A link dropped in the middle of a chunk: its bytes are incomplete. */
  broken(msg: PeerChunk, from: string): void;
  /** Dialing `node` failed (refused, unreachable, dropped): its address may have changed. */
  dialFailed?(node: string): void;
}

interface Outgoing {
  header: PeerMessage;
  payload?: Uint8Array;
  deadline: number;
  written: (err?: Error | null) => void;
}

const REDIAL_MIN_MS = 50;
const REDIAL_MAX_MS = 1000;

/** The link this node writes to one peer on: the connection that peer dialed (and said hello on). */
class OutboundLink {
  private sock: Socket | undefined;
  private readonly queue: Outgoing[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(readonly node: string, private readonly unreachable: () => string) {}

  /** The peer (re)connected: later frames go there, queued ones first. */
  attach(sock: Socket): void {
    if (this.sock && this.sock !== sock) this.sock.destroy(); // the peer restarted: its old link is dead
    this.sock = sock;
    sock.on('close', () => { if (this.sock === sock) this.sock = undefined; });
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0 && this.ready()) this.write(this.queue.shift()!);
  }

  private ready(): boolean { return this.sock !== undefined && this.sock.writable; }

  send(o: Outgoing): void {
    if (this.queue.length === 0 && this.ready()) { this.write(o); return; }
    this.queue.push(o);
    this.arm();
  }

  private write(o: Outgoing): void {
    writeFrame(this.sock!, o.header, o.payload, (err) => o.written(err));
  }

  /** Fails queued frames whose deadline passes before the peer connects. */
  private arm(): void {
    if (this.timer || this.queue.length === 0) return;
    const next = Math.min(...this.queue.map((o) => o.deadline));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const now = Date.now();
      const err = new Error(`peer sidecar ${this.node} did not connect before the deadline (${this.unreachable()})`);
      for (let i = this.queue.length - 1; i >= 0; i--) {
        if (this.queue[i]!.deadline <= now) this.queue.splice(i, 1)[0]!.written(err);
      }
      this.arm();
    }, Math.max(0, next - Date.now()));
  }

  close(): void {
    clearTimeout(this.timer);
    this.sock?.destroy();
    for (const o of this.queue.splice(0)) o.written(new Error('sidecar stopping'));
  }
}

/** The link this node reads one peer's chunks from: it dials the peer and keeps re-dialing while running. */
class InboundLink {
  private sock: Socket | undefined;
  private timer: NodeJS.Timeout | undefined;
  private delay = REDIAL_MIN_MS;
  private closed = false;
  /** Why the peer is not connected (for error messages). */
  lastError = 'not connected yet';

  constructor(public peer: PeerAddress, private readonly self: string, private readonly handler: InboundHandler, private readonly log: Logger) {}

  get connected(): boolean { return this.lastError === 'connected'; }

  /** Dials `peer` from now on: at once if its address changed or the link is down (its backoff restarts). */
  retarget(peer: PeerAddress): void {
    const moved = peer.host !== this.peer.host || peer.port !== this.peer.port;
    this.peer = peer;
    if (this.closed || (!moved && this.sock)) return;
    this.delay = REDIAL_MIN_MS;
    if (this.sock) { this.sock.destroy(); return; } // its close handler re-dials the new address
    clearTimeout(this.timer);
    this.dial();
  }

  dial(): void {
    if (this.closed) return;
    const setLowWater = receiveLowWaterSetter(); // the rest of a chunk comes in one wake-up (frames-direct-reader.ts)
    this.timer = undefined;
    const from = this.peer.node;
    let current: PeerChunk | undefined; // the chunk whose payload is being read
    const parsed = new WeakMap<object, PeerMessage>();
    const reader = new DirectFrameReader<object>({
      target: (raw, length) => {
        const msg = parsePeerMessage(raw);
        if (!msg.success) {
          this.log.warn({ from, issue: msg.error.issues[0]?.message }, 'bad peer message');
          return length > 0 ? null : undefined;
        }
        parsed.set(raw, msg.data);
        if (msg.data.op !== 'chunk') return length > 0 ? null : undefined;
        current = msg.data;
        return this.handler.target(msg.data, from);
      },
      frame: (raw, payload) => {
        current = undefined;
        const msg = parsed.get(raw);
        if (msg && msg.op !== 'hello') this.handler.message(msg, payload, from);
      },
      error: (err) => this.log.warn({ from, err: err.message }, 'peer stream error'),
    }, setLowWater ? { lowWater: (bytes) => setLowWater(sock, bytes) } : {});
    const sock = connect({ host: this.peer.host, port: this.peer.port, noDelay: true, onread: reader.onread });
    reader.attach(sock);
    this.sock = sock;
    sock.once('connect', () => {
      this.delay = REDIAL_MIN_MS;
      this.lastError = 'connected';
      writeFrame(sock, { op: 'hello', node: this.self });
    });
    const { host, port } = this.peer;
    sock.on('error', (err) => { this.lastError = `${host}:${port}: ${err.message}`; });
    sock.on('close', () => {
      if (current) this.handler.broken(current, from);
      current = undefined;
      if (this.sock !== sock) return; // replaced by a re-dial to a new address
      this.sock = undefined;
      if (this.closed) return;
      if (this.lastError === 'connected') this.lastError = 'the link dropped';
      this.handler.dialFailed?.(from);
      if (this.timer) return; // retarget() dialed already
      this.timer = setTimeout(() => this.dial(), this.delay);
      this.delay = Math.min(REDIAL_MAX_MS, this.delay * 2);
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.sock?.destroy();
  }
}

export class Peers {
  private server: Server | undefined;
  private readonly outbound = new Map<string, OutboundLink>();
  private readonly inbound = new Map<string, InboundLink>();
  private readonly accepted = new Set<Socket>();

  constructor(
    private readonly self: string,
    private readonly fixed: PeerAddress[],
    private readonly handler: InboundHandler,
    private readonly log: Logger,
  ) {}

  /** Listens for peers' links, then dials every fixed peer (the links this node reads from). */
  async listen(host: string, port: number): Promise<number> {
    const server = createServer({ noDelay: true }, (sock) => this.accept(sock));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => { server.off('error', reject); resolve(); });
    });
    this.server = server;
    for (const p of this.fixed) this.connect(p);
    return (server.address() as { port: number }).port;
  }

  /** Makes sure this node reads from `peer` (dials it, or re-dials at its new address). */
  connect(peer: PeerAddress): void {
    const link = this.inbound.get(peer.node);
    if (link) { link.retarget(peer); return; }
    if (!this.server) return; // stopped
    const created = new InboundLink(peer, this.self, this.handler, this.log);
    this.inbound.set(peer.node, created);
    this.log.info({ peer: peer.node, host: peer.host, port: peer.port }, 'linking to peer sidecar');
    created.dial();
  }

  /** Stops reading from `node` (it left). */
  disconnect(node: string): void {
    const link = this.inbound.get(node);
    if (!link) return;
    this.inbound.delete(node);
    link.close();
    this.log.info({ peer: node }, 'unlinked from peer sidecar (it left)');
  }

  /** Whether this node reads from `node` (dialed, connected or not). */
  has(node: string): boolean { return this.inbound.has(node); }

  /** Whether this node's link from `node` is up. */
  connected(node: string): boolean { return this.inbound.get(node)?.connected ?? false; }

  /** A peer dialed us: after its hello, this is the link we write to it on. */
  private accept(sock: Socket): void {
    this.accepted.add(sock);
    sock.on('error', () => {});
    sock.on('close', () => this.accepted.delete(sock));
    let from: string | undefined;
    new FrameReader<unknown>(sock, {
      target: (_h, length) => (length > 0 ? null : undefined),
      frame: (raw) => {
        const hello = PeerHello.safeParse(raw);
        if (from !== undefined || !hello.success) {
          this.log.warn({ from }, 'unexpected message on an outbound peer link');
          sock.destroy();
          return;
        }
        from = hello.data.node;
        this.link(from).attach(sock);
      },
      error: (err) => this.log.warn({ from, err: err.message }, 'peer stream error'),
    });
  }

  private link(node: string): OutboundLink {
    let link = this.outbound.get(node);
    if (!link) {
      link = new OutboundLink(node, () => this.inbound.get(node)?.lastError ?? 'it has not dialed this sidecar');
      this.outbound.set(node, link);
    }
    return link;
  }

  /** Queues `header` (+ payload) to the peer node; `written` fires once it is handed to the kernel or failed. */
  send(node: string, header: PeerMessage, payload: Uint8Array | undefined, deadline: number, written: (err?: Error | null) => void): void {
    this.link(node).send({ header, ...(payload ? { payload } : {}), deadline, written });
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const l of this.inbound.values()) l.close();
    for (const l of this.outbound.values()) l.close();
    for (const s of this.accepted) s.destroy();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  }
}
