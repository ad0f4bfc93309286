/**
 * The sidecar client an executor uses to move tensors and objects to other executors.
 *
 *   const sc = await SidecarClient.connect({ rank: 0, socketPath });
 *   await sc.send(tensor('f32', [29, 4096], data), id, [[2, 3]], { chunk: 0, numChunks: 2 });
 *   const t = await consumer.recv(id, 0);       // blocks; null past the last chunk
 *   await consumer.markDone(id, 0);            // frees the memory once the consumer groups are done (see markDone)
 *
 * In a tensor-parallel group every rank may call `send` with the same id: only the group leader
 * (lowest rank) moves the data, so the receivers see one tensor. Every call honours a deadline
 * (options.deadline, options.timeoutMs, or the client default) and an optional AbortSignal.
 */
import { SidecarError, badRequest } from '../errors.js';
import { ELEMENT_SIZE, checkShape, convertTensor, isDType, isTensor, numelOf, tensor, viewAs, type DType, type Tensor, type TensorData } from '../tensor.js';
import { INLINE_MAX_BYTES, QUIET_DONE_VERSION, type AllocReply, type PutReply, type RecvReply } from '../wire/protocol.js';
import { SpanKind, tracingOn, withSpan } from '../../lib/telemetry.js';
import { Connection, type Deadline } from './connection.js';
import { decode, encode } from './codec.js';
import { flushFrames } from '../../lib/frames.js';

/** Copies at least this long send the frames held this tick before they start (see send()). */
const FLUSH_BEFORE_COPY_BYTES = 4 * 1024 * 1024;

export interface SidecarClientOptions {
  /** This executor device's global rank (= its sidecar rank). */
  rank: number;
  /** The tensor-parallel group this rank belongs to (must contain `rank`). @default [rank] */
  group?: number[];
  /** The node sidecar's unix socket. */
  socketPath: string;
  /** Default deadline of every call, from the time of the call. @default 300_000 */
  timeoutMs?: number;
  /** Bytes per row this executor moves (e.g. hidden × element size): picks the slab slot size. */
  memoryHint?: number;
  /** Tensors received are converted to this dtype when they arrive in another one. */
  recvDtype?: DType;
  /** Expiry of unconsumed chunks this client sends. @default the sidecar's ttl */
  ttlMs?: number;
  /** Payloads up to this size travel inside the request (one round trip); larger ones are copied straight into shared memory. @default INLINE_MAX_BYTES (64 KiB) */
  inlineBytes?: number;
  /**
   * A large send may be answered with memory lent for the next one (saving it a round trip); lent memory unused
   * for this long is given back. 0: never borrow. @default 250
   */
  leaseIdleMs?: number;
}

export interface CallOptions {
  deadline?: number; // epoch ms
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface SendOptions extends CallOptions {
  chunk?: number; // @default 0
  numChunks?: number; // @default 1 (ignored with stream)
  stream?: boolean; // number of chunks unknown until closeStream
  ttlMs?: number;
}

export interface RecvOptions extends CallOptions {
  dtype?: DType; // overrides options.recvDtype
}

const checkGroups = (g: unknown): number[][] => {
  if (!Array.isArray(g) || g.length === 0 || !g.every((x) => Array.isArray(x) && x.length > 0 && x.every((r) => Number.isInteger(r) && r >= 0))) {
    throw badRequest(`dstGroups must be a non-empty list of non-empty rank lists, got ${JSON.stringify(g)}`);
  }
  return g as number[][];
};

/** Inline copies kept for a second recv of the same chunk (until markDone); the oldest go past this many. */
const MAX_KEPT = 4096;
const chunkKey = (id: string, chunk: number) => `${chunk}:${id}`;

/** Shared memory reserved on one connection for a tensor produced in place (see allocate). */
interface Placed {
  conn: Connection;
  alloc: number;
}

const checkChunk = (n: unknown, what: string) => {
  if (!Number.isInteger(n) || (n as number) < 0) throw badRequest(`${what} must be a non-negative integer, got ${String(n)}`);
};

export class SidecarClient {
  readonly rank: number;
  readonly group: number[];
  readonly leader: number;
  private conn: Connection | undefined;
  private connecting: Promise<Connection> | undefined;
  private closed = false;
  /**
   * Small objects the sidecar handed over inside its reply and counted this rank done with at once (the fast path):
   * kept until markDone, so a second recv of the chunk returns them again and markDone costs no round trip.
   */
  private readonly kept = new Map<string, unknown>();
  /** Tensors from allocate() not sent yet, by their data (the typed array a send finds them by). */
  private readonly placed = new WeakMap<TensorData, Placed>();
  /** Bytes of large sends (past `inlineBytes`) by how they reached shared memory: produced there (allocate) or copied. */
  readonly sent = { inPlaceBytes: 0, copiedBytes: 0 };
  /** Payloads up to this size travel inside the request (options.inlineBytes). */
  private readonly inlineBytes: number;

  private constructor(private readonly opts: SidecarClientOptions) {
    this.rank = opts.rank;
    this.group = [...(opts.group ?? [opts.rank])].sort((a, b) => a - b);
    if (!this.group.includes(this.rank)) throw badRequest(`group [${this.group}] must contain rank ${this.rank}`);
    this.leader = this.group[0]!;
    this.inlineBytes = opts.inlineBytes ?? INLINE_MAX_BYTES;
  }

  /** Creates a client and connects it (waiting up to `timeoutMs`, default 10 s, for the sidecar to be up). */
  static async connect(opts: SidecarClientOptions, { timeoutMs = 10_000 }: { timeoutMs?: number } = {}): Promise<SidecarClient> {
    const c = new SidecarClient(opts);
    await c.connection({ deadline: Date.now() + timeoutMs });
    return c;
  }

  /** The node this client's sidecar serves (known once connected). */
  get node(): string | undefined { return this.conn?.hello.node; }

  private deadline(o: CallOptions = {}): Deadline {
    return { deadline: o.deadline ?? Date.now() + (o.timeoutMs ?? this.opts.timeoutMs ?? 300_000), signal: o.signal };
  }

  /** The connection when it is up (the hot path: no promise to wait for), else undefined. */
  private live(): Connection | undefined {
    return !this.closed && this.conn?.alive ? this.conn : undefined;
  }

  private connection(d: Deadline): Promise<Connection> {
    if (this.closed) return Promise.reject(new SidecarError('SIDECAR_UNAVAILABLE', 'the client is closed'));
    if (this.conn?.alive) return Promise.resolve(this.conn);
    this.connecting ??= Connection.open(this.opts.socketPath,
      { rank: this.rank, group: this.group, ...(this.opts.memoryHint ? { hint: this.opts.memoryHint } : {}) }, d,
      { reuse: this.conn, ...(this.opts.leaseIdleMs !== undefined ? { leaseIdleMs: this.opts.leaseIdleMs } : {}) })
      .then((c) => { this.conn = c; return c; })
      .finally(() => { this.connecting = undefined; });
    return this.connecting;
  }

  /**
   * Runs one call in a CLIENT span (`sidecar.<name>`, a child of the caller's active span): every request
   * it makes carries the span's traceparent, so the sidecars' spans join the caller's trace.
   */
  private traced<T>(name: string, attributes: () => Record<string, string | number | boolean>, fn: () => Promise<T>): Promise<T> {
    if (!tracingOn()) return fn(); // no span, no attribute objects: this runs for every call
    return withSpan(`sidecar.${name}`, fn, { 'sidecar.rank': this.rank, ...attributes() }, SpanKind.CLIENT);
  }

  /** Sends one chunk of `id` to every group in `dstGroups`. Resolves once the data sits in the sidecar's memory. */
  async send(data: unknown, id: string, dstGroups: number[][], o: SendOptions = {}): Promise<void> {
    const chunk = o.chunk ?? 0;
    checkChunk(chunk, 'chunk');
    const dst = checkGroups(dstGroups);
    if (o.numChunks !== undefined && (!Number.isInteger(o.numChunks) || o.numChunks < 1 || chunk >= o.numChunks)) {
      throw badRequest(`numChunks ${o.numChunks} must be an integer > chunk ${chunk}`);
    }
    const enc = encode(data);
    if (this.rank !== this.leader) return; // the group leader sends for the whole group
    const size = enc.bytes.byteLength;
    return this.traced('send', () => ({ 'sidecar.id': id, 'sidecar.chunk': chunk, 'sidecar.bytes': size, 'sidecar.dst': JSON.stringify(dst) }), async () => {
      const d = this.deadline(o);
      const conn = this.live() ?? await this.connection(d);
      const put = {
        op: 'put', id, chunk, dst, kind: enc.kind, size, deadline: d.deadline,
        ...(o.stream ? { stream: true } : { numChunks: o.numChunks ?? 1 }),
        ...(enc.dtype ? { dtype: enc.dtype, shape: enc.shape } : {}),
        ...(o.ttlMs ?? this.opts.ttlMs ? { ttlMs: o.ttlMs ?? this.opts.ttlMs } : {}),
      };
      if (size <= this.inlineBytes) {
        await conn.call(put, enc.bytes, d);
        return;
      }
      // Produced in place (allocate) on this connection: already in the sidecar's memory, nothing to copy.
      const placed = isTensor(data) ? this.takePlaced(data.data) : undefined;
      if (placed && placed.conn === conn) {
        this.sent.inPlaceBytes += size;
        await this.put(conn, put, placed.alloc, d);
        return;
      }
      if (placed) placed.conn.giveBack(placed.alloc); // reserved on a connection since closed: copied below, from the view
      // Large: copy straight into the sidecar's memory — a lease from an earlier put, or a fresh allocation.
      const mem = await this.reserve(conn, size, d);
      // A long copy (≥ 4 MiB: ~0.4 ms) first sends what this process already wrote this tick, on every connection
      // (another send's put; recvs and markDones of the process's consumers), so the sidecar works on them — and a
      // peer link carries the earlier chunks — while this process copies. Below that the early write costs more than
      // the overlap gives: one more wake-up of the sidecar per send, where the held frames would leave together at
      // the end of the tick (measured at 1 MiB in node: 0.50 → 0.62 × memcpy without it; sidecar/ARCHITECTURE.md).
      if (size >= FLUSH_BEFORE_COPY_BYTES) flushFrames();
      conn.segment.bytes.set(enc.bytes, mem.offset);
      this.sent.copiedBytes += size;
      await this.put(conn, put, mem.alloc, d);
    });
  }

  /** Memory of `size` bytes in the sidecar's segment: a lease from an earlier put, or a fresh allocation. */
  private async reserve(conn: Connection, size: number, d: Deadline): Promise<{ alloc: number; offset: number }> {
    return conn.leases.take(size) ?? ((await conn.call({ op: 'alloc', size, deadline: d.deadline }, undefined, d)) as unknown as AllocReply);
  }

  /** Commits a chunk written into reserved memory (asking for a lease for the next send while the client holds few). */
  private async put(conn: Connection, put: Record<string, unknown>, alloc: number, d: Deadline): Promise<void> {
    const r = (await conn.call({ ...put, alloc, ...(conn.leases.wanted ? { lease: true } : {}) }, undefined, d)) as PutReply;
    if (r.lease) conn.leases.add(r.lease);
  }

  /**
   * A tensor for this executor to produce in place: its data is the sidecar's shared memory, so `send(t, …)` moves it
   * with no copy into that memory (a model's output written there directly, e.g. onnxruntime's pre-allocated outputs).
   * After send the memory is the sidecar's: do not touch `t.data` again. Not sent: `release(t)` gives it back (so
   * does closing the client). Small tensors (≤ `inlineBytes`) travel inside the request anyway: they get ordinary memory.
   */
  async allocate(dtype: DType, shape: number[], o: CallOptions = {}): Promise<Tensor> {
    if (!isDType(dtype)) throw badRequest(`unknown dtype ${String(dtype)}`);
    checkShape(shape);
    const numel = numelOf(shape);
    const size = numel * ELEMENT_SIZE[dtype];
    if (size <= this.inlineBytes || this.rank !== this.leader) return tensor(dtype, [...shape], viewAs(dtype, new ArrayBuffer(size), 0, numel));
    const d = this.deadline(o);
    const conn = this.live() ?? await this.connection(d);
    const mem = await this.reserve(conn, size, d);
    const t = tensor(dtype, [...shape], viewAs(dtype, conn.segment.buffer, mem.offset, numel));
    this.placed.set(t.data, { conn, alloc: mem.alloc });
    return t;
  }

  /** Gives back the memory of a tensor from allocate() that will not be sent. Anything else: nothing happens. */
  release(t: Tensor): void {
    const placed = this.takePlaced(t.data);
    placed?.conn.giveBack(placed.alloc);
  }

  /** The reservation behind a tensor from allocate(), now the caller's to commit or give back (once). */
  private takePlaced(data: TensorData): Placed | undefined {
    const placed = this.placed.get(data);
    if (placed) this.placed.delete(data);
    return placed;
  }

  /**
   * Chunk `chunk` of `id`: a JSON value, a Uint8Array, or a Tensor whose data is a view into shared memory
   * (valid until markDone). `null` past the last chunk. Waits until the chunk is there; idempotent.
   */
  async recv(id: string, chunk = 0, o: RecvOptions = {}): Promise<unknown> {
    checkChunk(chunk, 'chunk');
    const want = o.dtype ?? this.opts.recvDtype;
    const key = chunkKey(id, chunk);
    if (this.kept.has(key)) {
      const value = this.kept.get(key);
      return want && isTensor(value) ? convertTensor(value as Tensor, want) : value;
    }
    return this.traced('recv', () => ({ 'sidecar.id': id, 'sidecar.chunk': chunk }), async () => {
      const d = this.deadline(o);
      const conn = this.live() ?? await this.connection(d);
      const r = (await conn.call({ op: 'recv', id, chunk, deadline: d.deadline }, undefined, d)) as RecvReply & { payload?: Buffer };
      if (r.end) return null;
      const value = decode(r, conn.segment.buffer, r.payload);
      if (r.done) {
        this.kept.set(key, value);
        if (this.kept.size > MAX_KEPT) this.kept.delete(this.kept.keys().next().value!);
      }
      return want && isTensor(value) ? convertTensor(value as Tensor, want) : value;
    });
  }

  /**
   * This rank is done with the chunk: tensors received for it (views into shared memory) must not be used after.
   *
   * ⚠ WHEN THE MEMORY IS FREED — read this if the consumer executor has several ranks (tensor parallelism).
   * A chunk is freed once each destination group is done with it: one of its ranks called markDone, and every
   * other rank of the group either called markDone too or has no SidecarClient connected to the sidecar.
   *  - One process reads for the group (a one-rank group, or only one rank has a client): its markDone frees
   *    the chunk. Nothing else to do.
   *  - Every rank has a client and every rank reads the chunk: every rank calls markDone.
   *  - Every rank has a client but NOT every rank reads the chunk: pass `{group: true}` (done for the whole
   *    group). Without it the chunk stays held until it expires (ttl, default 5 min): a memory leak under load
   *    (the sidecar logs a warning naming this option when such a chunk expires).
   * Connect every rank's client before serving requests: a rank that connects after a group-mate freed a
   * chunk finds it gone (SIDECAR_ALREADY_CONSUMED).
   */
  async markDone(id: string, chunk = 0, o: CallOptions & { group?: boolean } = {}): Promise<void> {
    checkChunk(chunk, 'chunk');
    return this.traced('markDone', () => ({ 'sidecar.id': id, 'sidecar.chunk': chunk }), async () => {
      if (this.kept.delete(chunkKey(id, chunk)) && !o.group) return; // the sidecar counted this rank done at recv
      const d = this.deadline(o);
      const conn = this.live() ?? await this.connection(d);
      const done = { op: 'done', id, chunk, ...(o.group ? { group: true } : {}) };
      // A sidecar of protocol 3 answers a quiet done only if it fails: no round trip, and the consumer's next recv leaves
      // in the same write. Such a failure (a chunk this sidecar never held) is logged, not thrown; a closed connection
      // still rejects (post).
      if ((conn.hello.wire ?? 1) >= QUIET_DONE_VERSION) await conn.post({ ...done, quiet: true });
      else await conn.call(done, undefined, d);
    });
  }

  /** Ends a stream after `numChunks` chunks. May be called before any chunk is sent. */
  async closeStream(id: string, numChunks: number, dstGroups?: number[][], o: CallOptions = {}): Promise<void> {
    checkChunk(numChunks, 'numChunks');
    if (this.rank !== this.leader) return;
    return this.traced('closeStream', () => ({ 'sidecar.id': id, 'sidecar.chunks': numChunks }), async () => {
      const d = this.deadline(o);
      const conn = this.live() ?? await this.connection(d);
      await conn.call({ op: 'close', id, numChunks, ...(dstGroups ? { dst: checkGroups(dstGroups) } : {}) }, undefined, d);
    });
  }

  /** The producer gave up on `id`: every consumer waiting for it gets SIDECAR_PRODUCER_FAILED. */
  async fail(id: string, reason: string, dstGroups?: number[][], o: CallOptions = {}): Promise<void> {
    return this.traced('fail', () => ({ 'sidecar.id': id }), async () => {
      const d = this.deadline(o);
      const conn = this.live() ?? await this.connection(d);
      await conn.call({ op: 'fail', id, reason, ...(dstGroups ? { dst: checkGroups(dstGroups) } : {}) }, undefined, d);
    });
  }

  /** Closes the connection; ids this client declared but did not finish sending fail for their consumers. */
  close(): void {
    this.closed = true;
    this.conn?.close();
  }
}
