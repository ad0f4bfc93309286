/**
 * Sidecar ↔ sidecar links over TCP. Each sidecar listens for its peers and keeps one outbound
 * connection per peer node (opened on first use, re-opened after a drop). Chunk bytes are written
 * straight from the producer node's shared memory and read straight into a slot of the receiving
 * node's shared memory; order on one link is preserved, so a `close` never overtakes a chunk.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { Logger } from '../../lib/log.js';
import { sleep } from '../../lib/wait.js';
import { FrameReader, writeFrame, type PayloadTarget } from '../wire/frames.js';
import { PeerMessage, type PeerChunk } from '../wire/protocol.js';

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

class OutboundLink {
  private sock: Socket | undefined;
  private connecting: Promise<Socket> | undefined;
  private readonly queue: Outgoing[] = [];
  private pumping = false;

  constructor(readonly peer: PeerAddress, private readonly self: string, private readonly log: Logger) {}

  send(o: Outgoing): void {
    this.queue.push(o);
    void this.pump();
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0) {
        const head = this.queue[0]!;
        let sock: Socket;
        try {
          sock = await this.open(head.deadline);
        } catch (err) {
          this.queue.shift();
          head.written(err as Error);
          continue;
        }
        const o = this.queue.shift()!;
        writeFrame(sock, o.header, o.payload, (err) => o.written(err));
      }
    } finally {
      this.pumping = false;
    }
  }

  private async open(deadline: number): Promise<Socket> {
    if (this.sock && !this.sock.destroyed) return this.sock;
    this.connecting ??= this.dial(deadline).finally(() => { this.connecting = undefined; });
    return this.connecting;
  }

  private async dial(deadline: number): Promise<Socket> {
    let lastErr: Error | undefined;
    while (Date.now() < deadline) {
      try {
        const sock = await new Promise<Socket>((resolve, reject) => {
          const s = connect({ host: this.peer.host, port: this.peer.port, noDelay: true }, () => { s.off('error', reject); resolve(s); });
          s.once('error', reject);
        });
        sock.on('error', (err) => this.log.warn({ peer: this.peer.node, err: err.message }, 'peer link error'));
        sock.on('close', () => { if (this.sock === sock) this.sock = undefined; });
        writeFrame(sock, { op: 'hello', node: this.self });
        this.sock = sock;
        return sock;
      } catch (err) {
        lastErr = err as Error;
        await sleep(Math.min(200, Math.max(0, deadline - Date.now())));
      }
    }
    throw new Error(`peer sidecar ${this.peer.node} at ${this.peer.host}:${this.peer.port} unreachable: ${lastErr?.message ?? 'deadline passed'}`);
  }

  close(): void {
    this.sock?.destroy();
    for (const o of this.queue.splice(0)) o.written(new Error('sidecar stopping'));
  }
}

export class Peers {
  private server: Server | undefined;
  private readonly links = new Map<string, OutboundLink>();
  private readonly inbound = new Set<Socket>();
  readonly byRank = new Map<number, PeerAddress>();

  constructor(
    private readonly self: string,
    readonly peers: PeerAddress[],
    private readonly handler: InboundHandler,
    private readonly log: Logger,
  ) {
    for (const p of peers) for (const r of p.ranks) this.byRank.set(r, p);
  }

  async listen(host: string, port: number): Promise<number> {
    const server = createServer({ noDelay: true }, (sock) => this.accept(sock));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => { server.off('error', reject); resolve(); });
    });
    this.server = server;
    return (server.address() as { port: number }).port;
  }

  private accept(sock: Socket): void {
    this.inbound.add(sock);
    let from = 'unknown';
    let current: PeerChunk | undefined;
    const parsed = new WeakMap<object, PeerMessage>();
    new FrameReader<object>(sock, {
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
      frame: (raw, payload) => {
        current = undefined;
        const msg = parsed.get(raw);
        if (!msg) return;
        if (msg.op === 'hello') { from = msg.node; return; }
        this.handler.message(msg, payload, from);
      },
      error: (err) => this.log.warn({ from, err: err.message }, 'peer stream error'),
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      this.inbound.delete(sock);
      if (current) this.handler.broken(current, from);
    });
  }

  /** Queues `header` (+ payload) to the peer node; `written` fires once it is handed to the kernel or failed. */
  send(node: string, header: PeerMessage, payload: Uint8Array | undefined, deadline: number, written: (err?: Error | null) => void): void {
    const peer = this.peers.find((p) => p.node === node);
    if (!peer) { written(new Error(`unknown peer node ${node}`)); return; }
    let link = this.links.get(node);
    if (!link) this.links.set(node, (link = new OutboundLink(peer, this.self, this.log)));
    link.send({ header, ...(payload ? { payload } : {}), deadline, written });
  }

  async close(): Promise<void> {
    for (const l of this.links.values()) l.close();
    for (const s of this.inbound) s.destroy();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}
