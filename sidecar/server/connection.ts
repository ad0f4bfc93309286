/**
 * One executor client's connection to its node's sidecar: decodes requests, answers each by `rid`,
 * and remembers what a producer has declared but not yet sent, so that when the connection drops
 * the consumers of those ids get SIDECAR_PRODUCER_FAILED instead of waiting.
 */
import type { Socket } from 'node:net';
import { SidecarError, badRequest, errorToWire } from '../errors.js';
import type { Allocation } from '../shm/memory.js';
import { Cancel, type Cancellable } from '../cancel.js';
import { FrameReader, writeFrame } from '../../lib/frames.js';
import { WIRE_VERSION, parseClientRequest, type ClientRequest, type Lease, type PutReply, type PutReq, type RecvReply } from '../wire/protocol.js';
import type { ChunkMemory, SidecarServer } from './server.js';
import { serveTraced } from './tracing.js';
import { currentTraceparent } from '../../lib/telemetry.js';

/** A reply body's payload (a symbol key: JSON.stringify leaves it out of the header). */
const PAYLOAD = Symbol('payload');
type ReplyBody = Record<string, unknown> & { [PAYLOAD]?: Buffer };

interface OpenId {
  numChunks: number | undefined; // known once sent (non-stream) or closed
  sent: Set<number>;
  nodes: Set<string>; // peer nodes the id went to
}

export class ClientConnection {
  private rank: number | undefined;
  private group: number[] = [];
  private hint: number | undefined;
  private wire = 1; // the client's protocol version (hello)
  private readonly reservations = new Map<number, Allocation>();
  private readonly inflight = new Map<number, Cancel>();
  private readonly open = new Map<string, OpenId>();
  private leases = 0;

  constructor(private readonly srv: SidecarServer, private readonly sock: Socket) {
    sock.setNoDelay(true);
    sock.on('error', () => {});
    new FrameReader<unknown>(sock, {
      target: () => undefined,
      frame: (raw, payload) => this.handle(raw, payload),
      error: (err) => srv.log.warn({ err: err.message }, 'bad client stream'),
    });
  }

  private reply(rid: number, body: ReplyBody): void {
    if (this.sock.destroyed) return;
    // `body` is this request's own reply, made by dispatch: completed in place rather than copied.
    body.rid = rid;
    body.ok = true;
    writeFrame(this.sock, body, body[PAYLOAD]);
  }

  private handle(raw: unknown, payload: Buffer | null): void {
    const parsed = parseClientRequest(raw);
    if (!parsed.success) {
      const rid = typeof (raw as { rid?: unknown })?.rid === 'number' ? (raw as { rid: number }).rid : -1;
      const issue = parsed.error.issues[0];
      this.fail(rid, badRequest(`${issue?.path.join('.') || 'request'}: ${issue?.message}`));
      return;
    }
    const req = parsed.data;
    if (req.op === 'cancel') { this.cancel(req.rid); return; }
    if (req.op !== 'hello' && this.rank === undefined) { this.fail(req.rid, badRequest('send hello first')); return; }
    if (req.op === 'done' && !req.traceparent) { // nothing to wait for or cancel: served at once, no promise
      try {
        this.srv.ledger.done(req.id, req.chunk, this.rank!, req.group ?? false);
      } catch (err) { // e.g. SIDECAR_NOT_FOUND: answered even when quiet
        this.fail(req.rid, err);
        return;
      }
      if (!req.quiet) this.reply(req.rid, {});
      return;
    }
    const cancel = new Cancel();
    const rid = req.rid;
    this.inflight.set(rid, cancel);
    const traceparent = 'traceparent' in req ? req.traceparent : undefined;
    const served = traceparent ? this.traced(req, traceparent, () => this.dispatch(req, payload, cancel)) : this.dispatch(req, payload, cancel);
    const quiet = req.op === 'done' && req.quiet === true; // answered only if it fails (protocol 3)
    served.then(
      (body) => { this.inflight.delete(rid); if (!quiet) this.reply(rid, body); },
      (err) => { this.inflight.delete(rid); this.fail(rid, err); },
    );
  }

  private traced<T>(req: Exclude<ClientRequest, { op: 'cancel' }>, traceparent: string, fn: () => Promise<T>): Promise<T> {
    const attributes = { 'sidecar.rank': this.rank ?? -1, ...('id' in req ? { 'sidecar.id': req.id } : {}), ...('chunk' in req ? { 'sidecar.chunk': req.chunk } : {}) };
    return serveTraced(`sidecar.server.${req.op}`, traceparent, attributes, fn);
  }

  private fail(rid: number, err: unknown): void {
    if (!(err instanceof SidecarError)) this.srv.log.error({ err }, 'sidecar internal error');
    if (!this.sock.destroyed) writeFrame(this.sock, { rid, ok: false, error: errorToWire(err) });
  }

  private async dispatch(req: Exclude<ClientRequest, { op: 'cancel' }>, payload: Buffer | null, signal: Cancellable): Promise<ReplyBody> {
    const srv = this.srv;
    switch (req.op) {
      case 'hello': {
        if (!srv.opts.ranks.includes(req.rank)) {
          throw new SidecarError('SIDECAR_UNKNOWN_RANK', `rank ${req.rank} is not served by sidecar ${srv.opts.node} (ranks ${srv.opts.ranks})`);
        }
        if (!req.group.includes(req.rank)) throw badRequest(`group [${req.group}] must contain rank ${req.rank}`);
        if (this.rank !== undefined) throw badRequest('hello was already said on this connection');
        this.rank = req.rank;
        srv.rankConnected(req.rank);
        this.group = [...req.group].sort((a, b) => a - b);
        this.hint = req.hint;
        this.wire = req.wire ?? 1;
        const s = srv.memory.segment;
        return { node: srv.opts.node, instance: srv.instance, segment: { path: s.path, size: s.size }, ranks: srv.opts.ranks, wire: WIRE_VERSION };
      }
      case 'alloc': {
        const a = await srv.memory.alloc(req.size, { deadline: req.deadline, signal, ...(this.hint ? { hint: this.hint } : {}) });
        if (this.sock.destroyed) { srv.memory.free(a); throw new SidecarError('SIDECAR_UNAVAILABLE', 'client gone'); }
        this.reservations.set(req.rid, a); // keyed by the request id, so a cancel after the reply still frees it
        return { alloc: req.rid, offset: a.offset };
      }
      case 'put': return this.put(req, payload, signal) as Promise<Record<string, unknown>>;
      case 'recv': {
        const rec = await srv.recv(req.id, req.chunk, this.rank!, req.deadline, signal);
        if (!rec) return { end: true } satisfies RecvReply;
        const body: RecvReply & ReplyBody = { kind: rec.kind, size: rec.size, producerRank: rec.producerRank };
        if (rec.dtype) body.dtype = rec.dtype;
        if (rec.shape) body.shape = rec.shape;
        // The fast path: a small object's bytes go back inside the reply (a client of protocol 1 gets them in slots).
        if (rec.bytes && this.wire >= 2) {
          // The client gets a copy, so nothing of this sidecar's stays in use: this rank is done with the chunk now, and
          // its markDone costs no round trip (the one-frame fast path; the client answers a second recv from its copy).
          body.inline = true;
          body.done = true;
          body[PAYLOAD] = rec.bytes;
          srv.ledger.done(req.id, req.chunk, this.rank!, false);
          return body;
        }
        body.offset = (rec.alloc ?? await srv.materialize(rec, req.deadline, signal)).offset;
        return body;
      }
      case 'done':
        srv.ledger.done(req.id, req.chunk, this.rank!, req.group ?? false);
        return {};
      case 'close': {
        const open = this.open.get(req.id);
        const list = [...await this.peerNodes(req.dst, open)];
        srv.closeStream(req.id, req.numChunks, list);
        const o = open ?? { numChunks: req.numChunks, sent: new Set<number>(), nodes: new Set(list) };
        this.open.set(req.id, o);
        o.numChunks = req.numChunks;
        this.settle(req.id, o);
        return {};
      }
      case 'fail': {
        srv.failEverywhere(req.id, `producer rank ${this.rank} failed: ${req.reason}`, await this.peerNodes(req.dst, this.open.get(req.id)));
        this.open.delete(req.id);
        return {};
      }
    }
  }

  /** The peer nodes a close or fail of an id goes to: those of `dst` if given, else those the id went to, else all. */
  private async peerNodes(dst: number[][] | undefined, open: OpenId | undefined): Promise<Iterable<string>> {
    return dst ? (await this.srv.resolveRoute(dst)).remote.keys() : open ? open.nodes : this.srv.allNodes();
  }

  private async put(req: PutReq, payload: Buffer | null, signal: Cancellable): Promise<PutReply> {
    const srv = this.srv;
    let reserved = req.alloc === undefined ? undefined : this.reservations.get(req.alloc);
    if (req.alloc !== undefined) {
      if (!reserved) throw badRequest(`unknown allocation ${req.alloc}`);
      this.reservations.delete(req.alloc);
    }
    let mem: ChunkMemory;
    let remote: Map<string, number[][]>;
    try {
      if (req.kind === 'tensor' && (!req.dtype || !req.shape)) throw badRequest('a tensor needs dtype and shape');
      const routed = srv.resolveRoute(req.dst); // validates ranks before any memory is taken
      remote = (routed instanceof Promise ? await routed : routed).remote;
      if (reserved) {
        if (req.size > reserved.reserved) throw badRequest(`allocation holds ${reserved.reserved} bytes, put says ${req.size}`);
        mem = { alloc: srv.memory.trim(reserved, req.size) }; // a lease may be larger than this chunk
        reserved = undefined;
      } else {
        if ((payload?.length ?? 0) !== req.size) throw badRequest(`payload has ${payload?.length ?? 0} bytes, put says ${req.size}`);
        if (payload && srv.reserveInline(req.size)) {
          mem = { bytes: Buffer.from(payload) }; // the fast path: no slot (a copy: `payload` may be a view of a larger read)
        } else {
          const alloc = await srv.memory.alloc(req.size, { deadline: req.deadline, signal, ...(this.hint ? { hint: this.hint } : {}) });
          if (payload && req.size > 0) srv.memory.segment.bytes.set(payload, alloc.offset);
          mem = { alloc };
        }
      }
    } finally {
      if (reserved) srv.memory.free(reserved);
    }
    const numChunks = req.stream ? undefined : (req.numChunks ?? 1);
    srv.storeChunk({
      id: req.id, chunk: req.chunk, numChunks, stream: req.stream ?? false, dst: req.dst, kind: req.kind, size: req.size,
      producerRank: this.rank!, expiresAt: Date.now() + (req.ttlMs ?? srv.opts.ttlMs),
      ...(req.dtype ? { dtype: req.dtype } : {}), ...(req.shape ? { shape: req.shape } : {}),
      traceparent: currentTraceparent() ?? req.traceparent, // this put's span (pushes to peers are its children)
    }, mem, 'local');
    let open = this.open.get(req.id);
    if (!open) this.open.set(req.id, (open = { numChunks, sent: new Set(), nodes: new Set() }));
    open.sent.add(req.chunk);
    if (numChunks !== undefined) open.numChunks = numChunks;
    for (const n of remote.keys()) open.nodes.add(n);
    this.settle(req.id, open);
    const lease = req.lease ? this.lend(req.size) : undefined;
    return lease ? { lease } : {};
  }

  /**
   * Lends the client memory for its next send while a sixteenth of the segment would stay free and nothing waits
   * for memory (allocNow). Not a quarter: a producer running ahead of its consumer fills the segment to that mark,
   * and past it every send paid an alloc round trip, the state a busy pipeline lives in.
   */
  private lend(size: number): Lease | undefined {
    const mem = this.srv.memory;
    if (size === 0 || mem.bytesFree - size < mem.capacity / 16) return undefined;
    const a = mem.allocNow(size, this.hint);
    if (!a) return undefined;
    const id = -++this.leases; // negative: never a request id
    this.reservations.set(id, a);
    return { alloc: id, offset: a.offset, bytes: a.reserved };
  }

  /** The client gave up on request `rid` (deadline or abort): end its wait, or free what it reserved. */
  private cancel(rid: number): void {
    this.inflight.get(rid)?.abort();
    const a = this.reservations.get(rid);
    if (a) { this.reservations.delete(rid); this.srv.memory.free(a); }
  }

  /** Forgets an id once every declared chunk has been sent. */
  private settle(id: string, open: OpenId): void {
    if (open.numChunks === undefined) return;
    for (let c = 0; c < open.numChunks; c++) if (!open.sent.has(c)) return;
    this.open.delete(id);
  }

  /** The client went away: cancel its waits, free its reservations, fail what it declared but never sent. */
  closed(): void {
    if (this.rank !== undefined) this.srv.rankDisconnected(this.rank);
    for (const ac of this.inflight.values()) ac.abort();
    for (const a of this.reservations.values()) this.srv.memory.free(a);
    this.reservations.clear();
    for (const [id, open] of this.open) {
      const missing = open.numChunks === undefined ? 'the end of its stream' : `${open.numChunks - open.sent.size} chunk(s)`;
      this.srv.failEverywhere(id, `producer rank ${this.rank} disconnected before sending ${missing}`, open.nodes.size ? open.nodes : this.srv.allNodes());
    }
    this.open.clear();
  }

  destroy(): void { this.sock.destroy(); }
}
