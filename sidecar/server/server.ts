/**
 * The sidecar server: one per node. Owns the node's shared memory, the ledger of chunks, the unix socket
 * the local executors' clients use, the TCP links to the other nodes' sidecars, and an HTTP endpoint for
 * /health, /info and /metrics. See sidecar/ARCHITECTURE.md.
 */
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { existsSync, unlinkSync } from 'node:fs';
import { logger, type Logger } from '../../lib/log.js';
import { SidecarError } from '../errors.js';
import { SharedMemory, type Allocation } from '../shm/memory.js';
import { removeStaleSegments } from '../shm/segment.js';
import { INLINE_MAX_BYTES, type PeerChunk } from '../wire/protocol.js';
import { Ledger, type ChunkRecord, type FreeReason } from './ledger.js';
import { Peers } from './peers.js';
import { StoreMirror } from './mirror.js';
import { PeerDirectory } from './directory.js';
import { ChunkFinder } from './finder.js';
import { SidecarLease } from './lease.js';
import type { Cancellable } from '../cancel.js';
import type { TensorChunkMeta } from '../../lib/store.js';
import { createMetrics, type SidecarMetrics } from './metrics.js';
import { compileSidecarOptions, type CompiledSidecarOptions, type SidecarServerOptions } from './options.js';
import { ClientConnection } from './connection.js';
import { SpanKind, endSpan, startSpan, type Span } from './tracing.js';

export interface ChunkInput {
  id: string;
  chunk: number;
  numChunks: number | undefined; // undefined for a stream
  stream: boolean;
  dst: number[][];
  kind: ChunkRecord['kind'];
  dtype?: ChunkRecord['dtype'];
  shape?: number[];
  size: number;
  producerRank: number;
  expiresAt: number;
  traceparent?: string | undefined; // of the span that stored it (pushes to peers are its children)
}

/**
 * A chunk gets its Store entry only if still held this long after it was stored (mirror.ts): less than the finder's
 * first delay, so a recv waiting on another node finds it at its first lookup.
 */
const ENTRY_DELAY_MS = 20;

/** Where a chunk's bytes are: slots of the shared memory, or (a small object on the fast path) a Buffer in this process's heap. */
export type ChunkMemory = { alloc: Allocation; bytes?: undefined } | { bytes: Buffer; alloc?: undefined };

/** Destination groups split into those on this node and those per peer node. */
export interface Route { local: number[][]; remote: Map<string, number[][]> }

export class SidecarServer {
  readonly opts: CompiledSidecarOptions;
  readonly instance = randomBytes(4).toString('hex');
  readonly log: Logger;
  memory!: SharedMemory;
  ledger!: Ledger;
  peers!: Peers;
  directory!: PeerDirectory;
  mirror!: StoreMirror;
  private finder: ChunkFinder | undefined;
  private lease: SidecarLease | undefined;
  metrics!: SidecarMetrics;
  peerPort = 0;
  httpPort = 0;
  private unix: NetServer | undefined;
  private http: HttpServer | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private readonly conns = new Set<ClientConnection>();
  private readonly liveRanks = new Map<number, number>(); // rank → clients connected (said hello)
  private readonly incoming = new WeakMap<PeerChunk, Allocation | 'inline'>();
  /** Heap bytes held (or reserved) by small objects on the fast path; at most opts.inlineBudgetBytes. */
  inlineBytes = 0;
  private readonly brokenChunks = new WeakSet<PeerChunk>();
  private readonly receiving = new WeakMap<PeerChunk, Span>(); // spans of chunks coming from peers
  private stopping: Promise<void> | undefined;

  constructor(options: SidecarServerOptions) {
    this.opts = compileSidecarOptions(options);
    this.log = logger('sidecar', { node: this.opts.node });
  }

  async start(): Promise<this> {
    const o = this.opts;
    const stale = removeStaleSegments();
    if (stale.length) this.log.info({ stale }, 'removed shared memory left by dead sidecars');
    this.memory = new SharedMemory(o.node, o.slabs);
    this.metrics = createMetrics(o.node, () => ({
      bytesInUse: this.memory.bytesInUse, bytesFree: this.memory.bytesFree, waiting: this.memory.waiting, chunks: this.ledger.chunkCount,
    }), () => this.ledger.stats());
    this.memory.onWait = () => this.metrics.memoryWaits.inc();
    this.mirror = new StoreMirror(o.store, this.log, Math.min(ENTRY_DELAY_MS, o.findAfterMs / 2));
    this.directory = new PeerDirectory({
      self: o.node, fixed: o.peers, registry: o.store,
      changed: (node, peer) => {
        if (!peer) this.peers.disconnect(node);
        else if (this.peers.has(node)) this.peers.connect(peer);
      },
    });
    this.ledger = new Ledger({ free: (rec, reason) => this.onFree(rec, reason), live: (rank) => this.liveRanks.has(rank) }, o.ttlMs);
    this.peers = new Peers(o.node, o.peers, {
      target: (msg, from) => this.peerTarget(msg, from),
      message: (msg, payload, from) => {
        if (msg.op === 'chunk') this.peerChunk(msg, payload, from);
        else if (msg.op === 'close') this.ledger.setNumChunks(msg.id, msg.numChunks);
        else if (msg.op === 'fail') this.failLocal(msg.id, msg.reason);
      },
      broken: (msg, from) => {
        const span = this.receiving.get(msg);
        if (span) endSpan(span, new Error(`the link from ${from} dropped`));
        const a = this.incoming.get(msg);
        this.incoming.delete(msg);
        this.brokenChunks.add(msg); // an allocation still waiting for memory is freed when it comes
        if (a === 'inline') this.inlineBytes -= msg.size;
        else if (a) this.memory.free(a);
        this.failLocal(msg.id, `the link from sidecar ${from} dropped in the middle of chunk ${msg.chunk}`, 'SIDECAR_UNAVAILABLE');
      },
      dialFailed: () => this.refreshPeers(),
    }, this.log);
    try {
      this.peerPort = await this.peers.listen(o.host, o.peerPort);
      await this.listenUnix();
      await this.listenHttp();
      if (o.store) await this.joinStore(o.store);
    } catch (err) {
      await this.stop();
      throw err;
    }
    this.sweeper = setInterval(() => this.sweep(), o.sweepMs);
    this.sweeper.unref();
    this.log.info({ socket: o.socketPath, peerPort: this.peerPort, httpPort: this.httpPort, segment: this.memory.segment.path }, 'sidecar up');
    return this;
  }

  /** Registers in the Store (keeping the lease) and starts finding the chunks local recvs wait for. */
  private async joinStore(store: NonNullable<CompiledSidecarOptions['store']>): Promise<void> {
    const o = this.opts;
    this.lease = new SidecarLease(store, { node: o.node, instance: this.instance, ranks: [...o.ranks], host: o.host, peerPort: this.peerPort, httpPort: this.httpPort }, o.leaseMs, {
      reregistered: () => { for (const rec of this.ledger.heldChunks()) if (rec.entry) this.mirror.put(rec.entry); },
      ticked: () => this.refreshPeers(),
    }, this.log);
    await this.lease.start();
    this.finder = new ChunkFinder({
      lookup: (id, chunk) => store.getChunk(id, chunk),
      waiting: (id, chunk) => this.ledger.waitingOn(id, chunk),
      found: (meta, again) => void this.linkTo(meta, again),
      failed: (err) => this.log.warn({ err: err.message }, 'store lookup of a chunk failed; retrying'),
    }, { firstDelayMs: o.findAfterMs });
  }

  /** Re-reads the peers' registrations (never throws: a Store outage is logged). */
  private refreshPeers(): void {
    if (!this.directory.dynamic || this.stopping) return;
    this.directory.refresh().catch((err: Error) => this.log.warn({ err: err.message }, 'could not read the peer sidecars from the store'));
  }

  /** A chunk a local recv waits for is held by `meta.node`: dial it (its sidecar pushes the chunk on that link). */
  private async linkTo(meta: TensorChunkMeta, again: boolean): Promise<void> {
    if (meta.node === this.opts.node || this.stopping) return;
    if (again || !this.directory.peer(meta.node)) {
      try {
        await this.directory.refresh();
      } catch (err) {
        this.log.warn({ err: (err as Error).message, node: meta.node }, 'could not read the peer sidecars from the store');
      }
    }
    const peer = this.directory.peer(meta.node);
    if (!peer) {
      this.log.warn({ id: meta.id, chunk: meta.chunk, node: meta.node }, 'the chunk is held by a sidecar that is not registered (gone?)');
      return;
    }
    if (!this.stopping) this.peers.connect(peer);
  }

  /** A local recv: the ledger's, and, if it has to wait, the chunk is looked for in the Store later. */
  recv(id: string, chunk: number, rank: number, deadline: number, signal: Cancellable): Promise<ChunkRecord | null> {
    const got = this.ledger.recv(id, chunk, rank, deadline, signal);
    if (this.finder && this.ledger.waitingOn(id, chunk)) this.finder.wanted(id, chunk);
    return got;
  }

  private async listenUnix(): Promise<void> {
    const path = this.opts.socketPath;
    if (existsSync(path)) unlinkSync(path); // left by a dead predecessor
    const unix = createNetServer((sock) => this.accept(sock));
    await new Promise<void>((resolve, reject) => {
      unix.once('error', reject);
      unix.listen(path, () => { unix.off('error', reject); resolve(); });
    });
    this.unix = unix;
  }

  private accept(sock: Socket): void {
    const conn = new ClientConnection(this, sock);
    this.conns.add(conn);
    sock.on('close', () => { this.conns.delete(conn); conn.closed(); });
  }

  private async listenHttp(): Promise<void> {
    const http = createHttpServer((req, res) => {
      const send = (code: number, body: string, type = 'application/json') => { res.writeHead(code, { 'content-type': type }); res.end(body); };
      if (req.url === '/health') return send(200, JSON.stringify(this.health()));
      if (req.url === '/info') return send(200, JSON.stringify(this.info()));
      if (req.url === '/metrics') {
        this.metrics.registry.metrics().then((m) => send(200, m, this.metrics.registry.contentType), (e: Error) => send(500, e.message, 'text/plain'));
        return;
      }
      send(404, JSON.stringify({ error: { code: 'SIDECAR_NOT_FOUND', message: `no route ${req.url}` } }));
    });
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(this.opts.httpPort, this.opts.host, () => { http.off('error', reject); resolve(); });
    });
    this.http = http;
    this.httpPort = (http.address() as { port: number }).port;
  }

  info() {
    return { node: this.opts.node, instance: this.instance, ranks: this.opts.ranks, socketPath: this.opts.socketPath, host: this.opts.host, peerPort: this.peerPort, httpPort: this.httpPort };
  }

  health() {
    const ledger = this.ledger.stats();
    return {
      status: 'ok', ...this.info(), segment: this.memory.segment.name, capacity: this.memory.capacity,
      bytesInUse: this.memory.bytesInUse, bytesFree: this.memory.bytesFree, waiting: this.memory.waiting, inlineBytes: this.inlineBytes,
      chunks: ledger.chunks, ids: ledger.liveIds + ledger.tombstones, ledger, clients: this.conns.size,
      peers: this.directory.nodes().map((node) => ({ node, connected: this.peers.connected(node) })),
      ...(this.opts.store ? { store: { lookups: this.finder?.lookups ?? 0, entriesWritten: this.mirror.written, entriesSkipped: this.mirror.skipped, writeErrors: this.mirror.errors } } : {}),
    };
  }

  // ---------- routing ----------

  /** Splits destination groups into the ones on this node and the ones per peer node. */
  route(dst: number[][]): Route {
    const local: number[][] = [];
    const remote = new Map<string, number[][]>();
    for (const g of dst) {
      const nodes = new Set(g.map((r) => this.nodeOf(r)));
      if (nodes.size !== 1) throw new SidecarError('SIDECAR_BAD_REQUEST', `destination group [${g}] spans several nodes (${[...nodes]})`);
      const node = [...nodes][0]!;
      if (node === this.opts.node) local.push(g);
      else remote.set(node, [...(remote.get(node) ?? []), g]);
    }
    return { local, remote };
  }

  /**
   * `route`, after re-reading the registered sidecars if a rank is unknown (a sidecar that joined since). Returns
   * the route itself, not a promise, when every rank is known (the hot path pays no extra tick).
   */
  resolveRoute(dst: number[][]): Route | Promise<Route> {
    const unknown = this.directory.dynamic && dst.some((g) => g.some((r) => !this.opts.ranks.includes(r) && this.directory.nodeOf(r) === undefined));
    if (!unknown) return this.route(dst);
    return this.directory.refresh().then(
      () => this.route(dst),
      (err: Error) => { this.log.warn({ err: err.message }, 'could not read the peer sidecars from the store'); return this.route(dst); },
    );
  }

  nodeOf(rank: number): string {
    if (this.opts.ranks.includes(rank)) return this.opts.node;
    const node = this.directory.nodeOf(rank);
    if (node === undefined) throw new SidecarError('SIDECAR_UNKNOWN_RANK', `no sidecar serves rank ${rank}${this.directory.dynamic ? ' (none registered in the store)' : ''}`);
    return node;
  }

  allNodes(): string[] { return this.directory.nodes(); }

  // ---------- storing chunks ----------

  /**
   * Whether a chunk of `size` bytes takes the fast path (kept in this process's heap, no slot): small enough and within
   * the heap budget. Reserves the bytes when it does (given back by `release` or when the chunk is freed).
   */
  reserveInline(size: number): boolean {
    if (size > INLINE_MAX_BYTES || this.inlineBytes + size > this.opts.inlineBudgetBytes) return false;
    this.inlineBytes += size;
    return true;
  }

  /** Frees a chunk's memory (slots, or its share of the heap budget). */
  release(mem: ChunkMemory, size: number): void {
    if (mem.alloc) this.memory.free(mem.alloc);
    if (mem.bytes) this.inlineBytes -= size;
  }

  /**
   * Slots holding a fast-path chunk's bytes, for a client that only reads from shared memory (protocol version 1):
   * allocated and filled on its first such recv, freed with the chunk.
   */
  async materialize(rec: ChunkRecord, deadline: number, signal: Cancellable): Promise<Allocation> {
    if (rec.alloc) return rec.alloc;
    const a = await this.memory.alloc(rec.size, { deadline, signal });
    if (rec.alloc || !this.ledger.holds(rec)) { // another recv filled it meanwhile, or the chunk was freed
      this.memory.free(a);
      if (rec.alloc) return rec.alloc;
      throw new SidecarError('SIDECAR_ALREADY_CONSUMED', `${rec.id} chunk ${rec.chunk} was freed while it was being read`);
    }
    if (rec.size > 0) this.memory.segment.bytes.set(rec.bytes!, a.offset);
    rec.alloc = a;
    return a;
  }

  /**
   * Takes ownership of `mem` (already holding the chunk's bytes): records the chunk for local
   * consumers and pushes it to the other nodes' sidecars. Throws when the id already failed.
   */
  storeChunk(input: ChunkInput, mem: ChunkMemory, origin: 'local' | 'peer'): void {
    const { local, remote } = origin === 'local' ? this.route(input.dst) : { local: input.dst, remote: new Map<string, number[][]>() };
    const rec: ChunkRecord = {
      id: input.id, chunk: input.chunk, kind: input.kind, size: input.size, producerRank: input.producerRank,
      ...(mem.alloc ? { alloc: mem.alloc } : { bytes: mem.bytes }),
      groups: local, doneRanks: new Set(), pushes: remote.size, expiresAt: input.expiresAt, handedOut: false,
      ...(input.dtype ? { dtype: input.dtype } : {}), ...(input.shape ? { shape: input.shape } : {}),
    };
    const added = this.ledger.add(rec, input.stream ? undefined : input.numChunks);
    if (added !== 'added') {
      this.release(mem, input.size);
      if (added === 'failed') throw new SidecarError('SIDECAR_PRODUCER_FAILED', `${input.id} already failed`);
      return;
    }
    this.metrics.transfers.add(origin);
    this.metrics.bytesMoved.add(origin === 'local' ? 'local' : 'from_peer', input.size);
    for (const [node, groups] of remote) {
      const header: PeerChunk = {
        op: 'chunk', id: input.id, chunk: input.chunk, dst: groups, kind: input.kind, size: input.size,
        producerRank: input.producerRank, expiresAt: input.expiresAt,
        ...(input.numChunks !== undefined && !input.stream ? { numChunks: input.numChunks } : {}),
        ...(input.stream ? { stream: true } : {}),
        ...(input.dtype ? { dtype: input.dtype } : {}), ...(input.shape ? { shape: input.shape } : {}),
      };
      const push = input.traceparent ? startSpan('sidecar.push', input.traceparent, { 'sidecar.id': input.id, 'sidecar.chunk': input.chunk, 'sidecar.bytes': input.size, 'sidecar.peer': node }, SpanKind.PRODUCER) : undefined;
      if (push) header.traceparent = push.traceparent;
      this.peers.send(node, header, mem.bytes ?? this.memory.view(mem.alloc), input.expiresAt, (err) => {
        if (push) endSpan(push.span, err);
        if (err) this.log.warn({ id: input.id, chunk: input.chunk, node, err: err.message }, 'push to peer failed');
        else this.metrics.bytesMoved.add('to_peer', input.size);
        this.ledger.pushed(rec);
      });
    }
    // Only another node's sidecar looks an entry up (finder.ts): a chunk for this node's consumers alone gets none.
    if (origin === 'local' && remote.size > 0 && this.mirror.enabled && this.ledger.holds(rec)) {
      rec.entry = {
        id: rec.id, chunk: rec.chunk, node: this.opts.node, producerRank: rec.producerRank, kind: rec.kind === 'tensor' ? 'tensor' : 'object',
        location: mem.alloc ? { kind: 'shm', segment: this.memory.segment.name, offset: mem.alloc.offset, length: rec.size } : { kind: 'remote', host: this.opts.host, port: this.peerPort },
        size: rec.size, expiresAt: rec.expiresAt,
        ...(rec.dtype ? { dtype: rec.dtype } : {}), ...(rec.shape ? { shape: rec.shape } : {}),
      };
      this.mirror.put(rec.entry);
    }
  }

  // ---------- clients ----------

  rankConnected(rank: number): void {
    this.liveRanks.set(rank, (this.liveRanks.get(rank) ?? 0) + 1);
  }

  rankDisconnected(rank: number): void {
    const n = (this.liveRanks.get(rank) ?? 1) - 1;
    if (n > 0) { this.liveRanks.set(rank, n); return; }
    this.liveRanks.delete(rank);
    if (!this.stopping) this.ledger.rankGone(rank);
  }

  private onFree(rec: ChunkRecord, reason: FreeReason): void {
    if (reason === 'expired' && rec.doneRanks.size > 0) {
      this.log.warn({ id: rec.id, chunk: rec.chunk, done: [...rec.doneRanks], waitingFor: this.ledger.waitingFor(rec) },
        'chunk expired while some ranks of its group never marked it done: if not every worker of the executor reads it, call markDone(id, chunk, {group: true})');
    }
    if (rec.alloc) this.memory.free(rec.alloc);
    if (rec.bytes) this.inlineBytes -= rec.size;
    this.metrics.freed.add(reason);
    if (reason === 'expired') this.metrics.expiredBytes.inc(rec.size);
    if (rec.entry) this.mirror.remove(rec.id, rec.chunk);
  }

  /**
   * Where a chunk from a peer lands: a small one in a Buffer of this process (the fast path, within the heap budget),
   * any other in a slot of this node's memory (the socket reads straight into it).
   */
  private peerTarget(msg: PeerChunk, from: string): Buffer | null | undefined | Promise<Buffer | null> {
    if (msg.traceparent) {
      const attributes = { 'sidecar.id': msg.id, 'sidecar.chunk': msg.chunk, 'sidecar.bytes': msg.size, 'sidecar.peer': from };
      this.receiving.set(msg, startSpan('sidecar.peer.recv', msg.traceparent, attributes, SpanKind.CONSUMER).span);
    }
    if (this.ledger.isFailed(msg.id)) return null;
    if (this.reserveInline(msg.size)) { this.incoming.set(msg, 'inline'); return undefined; } // the reader allocates it
    const now = this.memory.allocNow(msg.size);
    if (now) { this.incoming.set(msg, now); return this.memory.view(now); }
    return this.memory.alloc(msg.size, { deadline: msg.expiresAt }).then(
      (a) => {
        if (this.brokenChunks.has(msg)) { this.memory.free(a); return null; }
        this.incoming.set(msg, a);
        return this.memory.view(a);
      },
      (err: Error) => {
        this.failLocal(msg.id, `no memory on ${this.opts.node} for chunk ${msg.chunk}: ${err.message}`, 'SIDECAR_TIMEOUT');
        return null;
      },
    );
  }

  /** The bytes of a chunk from a peer are all in (its span ends). */
  private peerChunk(msg: PeerChunk, payload: Buffer | null, from: string): void {
    const span = this.receiving.get(msg);
    if (span) endSpan(span);
    const alloc = this.incoming.get(msg);
    if (!alloc) return; // discarded (failed id or no memory)
    if (alloc === 'inline' && !payload) { this.inlineBytes -= msg.size; return; } // the reader dropped it (logged there)
    try {
      this.storeChunk({ ...msg, numChunks: msg.numChunks, stream: msg.stream ?? false }, alloc === 'inline' ? { bytes: payload! } : { alloc }, 'peer');
    } catch (err) {
      this.log.debug({ id: msg.id, from, err: (err as Error).message }, 'dropped chunk from peer');
    }
  }

  // ---------- streams and failures ----------

  /** Fails `id` on this node only (waiting consumers get the error). */
  failLocal(id: string, reason: string, code: 'SIDECAR_PRODUCER_FAILED' | 'SIDECAR_UNAVAILABLE' | 'SIDECAR_TIMEOUT' = 'SIDECAR_PRODUCER_FAILED'): void {
    if (this.ledger.isFailed(id)) return;
    this.metrics.producerFailures.inc();
    this.ledger.fail(id, new SidecarError(code, `${id}: ${reason}`));
  }

  /** Fails `id` here and on the given peer nodes. */
  failEverywhere(id: string, reason: string, nodes: Iterable<string>): void {
    this.failLocal(id, reason);
    for (const node of nodes) this.peers.send(node, { op: 'fail', id, reason }, undefined, Date.now() + 10_000, () => {});
  }

  closeStream(id: string, numChunks: number, nodes: Iterable<string>): void {
    this.ledger.setNumChunks(id, numChunks);
    for (const node of nodes) this.peers.send(node, { op: 'close', id, numChunks }, undefined, Date.now() + this.opts.ttlMs, () => {});
  }

  private sweep(): void {
    const expired = this.ledger.sweep(Date.now());
    if (expired.length) this.log.info({ n: expired.length }, 'freed expired chunks');
  }

  // ---------- stop ----------

  /** Stops listening, drops every connection, rejects every waiter and unlinks the shared memory. Idempotent. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearInterval(this.sweeper);
      this.finder?.stop();
      const err = new SidecarError('SIDECAR_UNAVAILABLE', `sidecar ${this.opts.node} is stopping`);
      this.ledger?.close(err);
      for (const c of this.conns) c.destroy();
      await Promise.all([
        new Promise<void>((r) => (this.unix ? this.unix.close(() => r()) : r())),
        new Promise<void>((r) => (this.http ? (this.http.closeAllConnections(), this.http.close(() => r())) : r())),
        this.peers?.close(),
      ]);
      this.memory?.close();
      try { unlinkSync(this.opts.socketPath); } catch { /* gone */ }
      await Promise.race([this.mirror?.close(), new Promise((r) => setTimeout(r, 2000).unref())]);
      // After the mirror's writes: removes the registration and every entry of this node (chunks still held included).
      await Promise.race([this.lease?.stop(), new Promise((r) => setTimeout(r, 2000).unref())]);
    })();
    return this.stopping;
  }
}
