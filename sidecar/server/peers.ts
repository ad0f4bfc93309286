/**
 * Sidecar ↔ sidecar links over TCP. Bytes flow from the side that accepted a connection to the side that
 * dialed it: every sidecar dials each of its peers (and re-dials after a drop) and reads what that peer sends
 * it with a DirectFrameReader, so the kernel copies chunk bytes from the socket straight into a slot of its
 * own shared memory (Node only gives `onread` buffers to sockets it dials). A peer writes its chunks to this
 * node on the connection it accepted from it, straight from its own shared memory (one writev per chunk).
 * One link per direction; order on a link is preserved, so a `close` never overtakes a chunk.
 *
 * Both sidecars of a pair must list each other as peers (the receiver dials the sender).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { Logger } from '../../lib/log.js';
import { FrameReader, writeFrame, type PayloadTarget } from '../wire/frames.js';
import { DirectFrameReader } from '../wire/direct-reader.js';
import { PeerHello, PeerMessage, type PeerChunk } from '../wire/protocol.js';

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

  constructor(readonly peer: PeerAddress, private readonly self: string, private readonly handler: InboundHandler, private readonly log: Logger) {}

  dial(): void {
    if (this.closed) return;
    const from = this.peer.node;
    let current: PeerChunk | undefined; // the chunk whose payload is being read
    const parsed = new WeakMap<object, PeerMessage>();
    const reader = new DirectFrameReader<object>({
      target: (raw, length) => {
        const msg = PeerMessage.safeParse(raw);
        if (!msg.success) {
          this.log.warn({ from, issue: msg.error.issues[0]?.message }, 'bad peer message');
          return length > 0 ? null : undefined;
        }
        parsed.set(raw, msg.data);
        if (msg.data.op !== 'chunk') return length > 0 ? null : undefined;
        current = msg.data;
        return this.handler.target(msg.data, from);
      },
      frame: (raw) => {
        current = undefined;
        const msg = parsed.get(raw);
        if (msg && msg.op !== 'hello') this.handler.message(msg, null, from);
      },
      error: (err) => this.log.warn({ from, err: err.message }, 'peer stream error'),
    });
    const sock = connect({ host: this.peer.host, port: this.peer.port, noDelay: true, onread: reader.onread });
    reader.attach(sock);
    this.sock = sock;
    sock.once('connect', () => {
      this.delay = REDIAL_MIN_MS;
      this.lastError = 'connected';
      writeFrame(sock, { op: 'hello', node: this.self });
    });
    sock.on('error', (err) => { this.lastError = `${this.peer.host}:${this.peer.port}: ${err.message}`; });
    sock.on('close', () => {
      if (current) this.handler.broken(current, from);
      current = undefined;
      if (this.sock === sock) this.sock = undefined;
      if (this.closed) return;
      if (this.lastError === 'connected') this.lastError = 'the link dropped';
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
  readonly byRank = new Map<number, PeerAddress>();

  constructor(
    private readonly self: string,
    readonly peers: PeerAddress[],
    private readonly handler: InboundHandler,
    private readonly log: Logger,
  ) {
    for (const p of peers) for (const r of p.ranks) this.byRank.set(r, p);
  }

  /** Listens for peers' links, then dials every peer (the links this node reads from). */
  async listen(host: string, port: number): Promise<number> {
    const server = createServer({ noDelay: true }, (sock) => this.accept(sock));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => { server.off('error', reject); resolve(); });
    });
    this.server = server;
    for (const p of this.peers) {
      const link = new InboundLink(p, this.self, this.handler, this.log);
      this.inbound.set(p.node, link);
      link.dial();
    }
    return (server.address() as { port: number }).port;
  }

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
      link = new OutboundLink(node, () => this.inbound.get(node)?.lastError ?? 'not a configured peer');
      this.outbound.set(node, link);
    }
    return link;
  }

  /** Queues `header` (+ payload) to the peer node; `written` fires once it is handed to the kernel or failed. */
  send(node: string, header: PeerMessage, payload: Uint8Array | undefined, deadline: number, written: (err?: Error | null) => void): void {
    if (!this.inbound.has(node)) { written(new Error(`unknown peer node ${node}`)); return; }
    this.link(node).send({ header, ...(payload ? { payload } : {}), deadline, written });
  }

  async close(): Promise<void> {
    for (const l of this.inbound.values()) l.close();
    for (const l of this.outbound.values()) l.close();
    for (const s of this.accepted) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
