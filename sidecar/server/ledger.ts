/**
 * The ledger: every chunk this sidecar holds, who still has to consume it, and who is waiting for what.
 *
 * Invariants:
 *  - a chunk's memory is freed exactly once: when each local destination group is done with it and every push to
 *    another node has been written, when it expires, or (if never handed out) when its producer fails;
 *  - a group is done with a chunk when at least one of its ranks marked it done and each of its other ranks
 *    either marked it done too or has no client connected to this sidecar (a rank without a client holds no
 *    view and cannot be reading: executors connect their clients before they serve). So a group in which one
 *    process reads needs no `{group: true}`; one whose ranks all have clients but do not all read does;
 *  - a recv never waits past its deadline, and is woken by the chunk, by the end of the stream (→ null),
 *    or by the producer's failure (→ SIDECAR_PRODUCER_FAILED);
 *  - an id with nothing held and nobody waiting leaves the live map for a tombstone (what lets late recvs fail fast
 *    and a late duplicate send be ignored), dropped with its generation at least `tombstoneMs` later.
 *
 * Memory stays bounded at high transfer rates (thousands of ids/s, ttl 5 min):
 *  - `live` holds only ids with chunks held or recvs waiting (plus, briefly, one being changed);
 *  - a tombstone is one entry of a generation Map; a fully consumed id with a known chunk count and one free reason
 *    for all its chunks (the common case) is a number, `numChunks * 2 + (expired ? 1 : 0)`; the rare others
 *    (failed ids, streams still open, mixed reasons) keep their IdEntry. Generations are opened by `sweep` every
 *    `tombstoneMs / 4` and a whole generation is dropped once `tombstoneMs` has passed since it was closed:
 *    no timer or object per id, sweep cost proportional to the generations (≤ 6), not to the ids;
 *  - held chunks wait for their expiry on a timing wheel (a Set per `slotMs` slot of `expiresAt`, removed on
 *    free), so a sweep visits the slots that came due and the chunks in them, not every id.
 */
import { SidecarError } from '../errors.js';
import type { Cancellable } from '../cancel.js';
import type { Allocation } from '../shm/memory.js';
import type { ChunkKind } from '../wire/protocol.js';
import type { DType } from '../tensor.js';
import { deadlineTimer } from '../../lib/wait.js';
import type { TensorChunkMeta } from '../../lib/store.js';

export interface ChunkRecord {
  id: string;
  chunk: number;
  kind: ChunkKind;
  dtype?: DType;
  shape?: number[];
  size: number;
  alloc?: Allocation; // its slots in shared memory (a small object on the fast path has none until an old client reads it)
  bytes?: Buffer; // a small object's bytes, held in the sidecar's heap (the fast path; see INLINE_MAX_BYTES)
  producerRank: number;
  groups: number[][]; // destination groups served by this node
  doneRanks: Set<number>; // local consumer ranks that marked it done
  pushes: number; // pushes to other nodes not yet written
  expiresAt: number;
  handedOut: boolean;
  entry?: TensorChunkMeta; // what the Store records for it (chunks produced on this node, with a Store)
}

export type FreeReason = 'done' | 'expired' | 'failed';

interface Waiter {
  rank: number;
  resolve(r: ChunkRecord | null): void;
  reject(e: Error): void;
  cleanup(): void;
}

interface IdEntry {
  numChunks: number | undefined; // undefined: not known yet (a stream, or no chunk seen)
  chunks: Map<number, ChunkRecord>;
  freed: Map<number, FreeReason>;
  waiters: Map<number, Set<Waiter>>;
  failed: SidecarError | undefined;
}

/** What is left of an id with nothing held and nobody waiting: see the file comment. */
type Tomb = number | IdEntry;

/** A generation of tombstones: ids that became idle between `openedAt` and `closedAt`. */
interface Generation {
  tombs: Map<string, Tomb>;
  closedAt: number; // Infinity while it is the current one
}

export interface LedgerHooks {
  free(rec: ChunkRecord, reason: FreeReason): void;
  /** Whether `rank` has a client connected to this sidecar. */
  live(rank: number): boolean;
}

export interface LedgerOptions {
  /** The clock for recv deadlines and generation times (default Date.now). */
  clock?: () => number;
  /** Width of an expiry-wheel slot in ms (default 10). */
  slotMs?: number;
}

/** Entry counts, so that the ledger's growth is observable (/health, /metrics). */
export interface LedgerStats {
  liveIds: number; // ids with chunks held or recvs waiting
  chunks: number; // chunks held
  waiting: number; // recvs waiting
  tombstones: number; // idle ids remembered for late recvs / duplicate sends
  generations: number;
}


const compact = (e: IdEntry): Tomb => {
  const n = e.numChunks;
  if (e.failed || n === undefined || e.freed.size !== n || n === 0) return e;
  const first = e.freed.get(0);
  if (first === 'failed') return e;
  for (let c = 0; c < n; c++) if (e.freed.get(c) !== first) return e;
  return n * 2 + (first === 'expired' ? 1 : 0);
};

const expand = (t: number): IdEntry => {
  const n = t >>> 1;
  const reason: FreeReason = t & 1 ? 'expired' : 'done';
  const freed = new Map<number, FreeReason>();
  for (let c = 0; c < n; c++) freed.set(c, reason);
  return { numChunks: n, chunks: new Map(), freed, waiters: new Map(), failed: undefined };
};

export class Ledger {
  private readonly live = new Map<string, IdEntry>();
  private readonly generations: Generation[] = [];
  private readonly clock: () => number;
  private readonly slotMs: number;
  private readonly wheel = new Map<number, Set<ChunkRecord>>(); // slot of expiresAt → chunks held
  private readonly overdue = new Set<ChunkRecord>(); // past expiry, still pushing (or added already expired)
  private sweptSlot = -Infinity; // every slot ≤ this one has been emptied
  private held = 0;
  private openedAt: number;

  constructor(private readonly hooks: LedgerHooks, private readonly tombstoneMs: number, opts: LedgerOptions = {}) {
    this.clock = opts.clock ?? Date.now;
    this.slotMs = opts.slotMs ?? 10;
    this.openedAt = this.clock();
    this.generations.push({ tombs: new Map(), closedAt: Infinity });
  }

  // ---------- ids: live entries and tombstones ----------

  private tomb(id: string): Tomb | undefined {
    for (let i = this.generations.length - 1; i >= 0; i--) {
      const t = this.generations[i]!.tombs.get(id);
      if (t !== undefined) return t;
    }
    return undefined;
  }

  /** The id's state for reading: its live entry, its tombstone, or undefined if unknown. */
  private find(id: string): IdEntry | number | undefined {
    return this.live.get(id) ?? this.tomb(id);
  }

  /** The id's live entry, brought back from its tombstone or created; `settle` it after the change. */
  private open(id: string): IdEntry {
    let e = this.live.get(id);
    if (e) return e;
    for (const g of this.generations) {
      const t = g.tombs.get(id);
      if (t === undefined) continue;
      g.tombs.delete(id);
      e = typeof t === 'number' ? expand(t) : t;
      break;
    }
    e ??= { numChunks: undefined, chunks: new Map(), freed: new Map(), waiters: new Map(), failed: undefined };
    this.live.set(id, e);
    return e;
  }

  /** An entry with nothing held and nobody waiting becomes a tombstone of the current generation. */
  private settle(id: string, e: IdEntry): void {
    if (e.chunks.size > 0 || e.waiters.size > 0 || this.live.get(id) !== e) return;
    this.live.delete(id);
    this.generations[this.generations.length - 1]!.tombs.set(id, compact(e));
  }

  get chunkCount(): number { return this.held; }

  stats(): LedgerStats {
    let waiting = 0;
    for (const e of this.live.values()) for (const ws of e.waiters.values()) waiting += ws.size;
    let tombstones = 0;
    for (const g of this.generations) tombstones += g.tombs.size;
    return { liveIds: this.live.size, chunks: this.held, waiting, tombstones, generations: this.generations.length };
  }

  // ---------- expiry wheel ----------

  private slotOf(rec: ChunkRecord): number { return Math.floor(rec.expiresAt / this.slotMs); }

  private schedule(rec: ChunkRecord): void {
    const k = this.slotOf(rec);
    if (k <= this.sweptSlot) { this.overdue.add(rec); return; }
    let set = this.wheel.get(k);
    if (!set) this.wheel.set(k, (set = new Set()));
    set.add(rec);
  }

  private unschedule(rec: ChunkRecord): void {
    const k = this.slotOf(rec);
    const set = this.wheel.get(k);
    if (set?.delete(rec) && set.size === 0) this.wheel.delete(k);
    this.overdue.delete(rec);
  }

  // ---------- operations ----------

  /**
   * Adds a chunk and wakes its waiters. Returns 'duplicate' (the same chunk is already held: a retry or a
   * second sender of the group) or 'failed' (the id failed): the caller then frees its memory.
   */
  add(rec: ChunkRecord, numChunks?: number): 'added' | 'duplicate' | 'failed' {
    const t = this.find(rec.id);
    if (typeof t === 'number' && rec.chunk < t >>> 1) return 'duplicate';
    if (typeof t === 'object') {
      if (t.failed) return 'failed';
      if (t.chunks.has(rec.chunk) || t.freed.has(rec.chunk)) return 'duplicate';
    }
    const e = this.open(rec.id);
    e.chunks.set(rec.chunk, rec);
    this.held++;
    this.schedule(rec);
    if (numChunks !== undefined) this.setNumChunks(rec.id, numChunks);
    const ws = e.waiters.get(rec.chunk);
    if (ws) {
      e.waiters.delete(rec.chunk);
      rec.handedOut = true;
      for (const w of ws) { w.cleanup(); w.resolve(rec); }
    }
    this.maybeFree(rec);
    return 'added';
  }

  /** Fixes the number of chunks of `id` (a stream's close, or a sender's numChunks); wakes recvs past the end. */
  setNumChunks(id: string, n: number): void {
    const t = this.find(id);
    if (t === n * 2 || t === n * 2 + 1) return; // already so, and nothing can be waiting
    const e = this.open(id);
    e.numChunks = n;
    for (const [chunk, ws] of e.waiters) {
      if (chunk < n) continue;
      e.waiters.delete(chunk);
      for (const w of ws) { w.cleanup(); w.resolve(null); }
    }
    this.settle(id, e);
  }

  private lookup(t: IdEntry | number | undefined, id: string, chunk: number): ChunkRecord | null | undefined {
    if (t === undefined) return undefined;
    let freed: FreeReason | undefined;
    if (typeof t === 'number') {
      if (chunk >= t >>> 1) return null;
      freed = t & 1 ? 'expired' : 'done';
    } else {
      if (t.failed) throw t.failed;
      const rec = t.chunks.get(chunk);
      if (rec) { rec.handedOut = true; return rec; }
      if (t.numChunks !== undefined && chunk >= t.numChunks) return null;
      freed = t.freed.get(chunk);
    }
    if (freed === 'expired') throw new SidecarError('SIDECAR_EXPIRED', `chunk ${chunk} of ${id} expired before it was consumed`);
    if (freed) throw new SidecarError('SIDECAR_ALREADY_CONSUMED', `chunk ${chunk} of ${id} was already consumed and freed`);
    return undefined;
  }

  /** The chunk, or null past the last chunk; waits until `deadline` for it to arrive. */
  recv(id: string, chunk: number, rank: number, deadline: number, signal?: Cancellable): Promise<ChunkRecord | null> {
    try {
      const now = this.lookup(this.find(id), id, chunk);
      if (now !== undefined) return Promise.resolve(now);
    } catch (err) {
      return Promise.reject(err);
    }
    const e = this.open(id);
    return new Promise((resolve, reject) => {
      let set = e.waiters.get(chunk);
      if (!set) e.waiters.set(chunk, (set = new Set()));
      const drop = () => {
        set!.delete(w);
        if (set!.size === 0 && e.waiters.get(chunk) === set) { e.waiters.delete(chunk); this.settle(id, e); }
      };
      const fail = (err: Error) => { w.cleanup(); drop(); reject(err); };
      const timer = deadlineTimer(deadline, () => fail(new SidecarError('SIDECAR_TIMEOUT', `chunk ${chunk} of ${id} did not arrive before the deadline`)), { now: this.clock });
      const onAbort = () => fail(new SidecarError('SIDECAR_ABORTED', `recv of chunk ${chunk} of ${id} was cancelled`));
      const w: Waiter = { rank, resolve, reject, cleanup: () => { timer.clear(); signal?.removeEventListener('abort', onAbort); } };
      set.add(w);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Records that `ranks` consumed the chunk; frees it when nobody else needs it. Idempotent. */
  done(id: string, chunk: number, rank: number, wholeGroup: boolean): void {
    const t = this.find(id);
    const rec = typeof t === 'object' ? t.chunks.get(chunk) : undefined;
    if (!rec) {
      if (typeof t === 'number' ? chunk < t >>> 1 : t?.freed.has(chunk)) return;
      throw new SidecarError('SIDECAR_NOT_FOUND', `this sidecar holds no chunk ${chunk} of ${id}`);
    }
    const ranks = wholeGroup ? (rec.groups.find((g) => g.includes(rank)) ?? [rank]) : [rank];
    for (const r of ranks) rec.doneRanks.add(r);
    this.maybeFree(rec);
  }

  /** `rank`'s last client disconnected: chunks its group-mates are done with no longer wait for it. */
  rankGone(rank: number): void {
    for (const e of [...this.live.values()]) {
      for (const rec of [...e.chunks.values()]) if (rec.groups.some((g) => g.includes(rank))) this.maybeFree(rec);
    }
  }

  /** Ranks of `rec`'s groups that it still waits for (empty once every group is done). */
  waitingFor(rec: ChunkRecord): number[] {
    const out: number[] = [];
    for (const g of rec.groups) {
      const started = g.some((r) => rec.doneRanks.has(r));
      for (const r of g) if (!rec.doneRanks.has(r) && (!started || this.hooks.live(r))) out.push(r);
    }
    return out;
  }

  /** One push of `rec` to another node has been written (or given up). */
  pushed(rec: ChunkRecord): void {
    rec.pushes--;
    this.maybeFree(rec);
  }

  private maybeFree(rec: ChunkRecord): void {
    if (rec.pushes <= 0 && this.waitingFor(rec).length === 0) this.release(rec, 'done');
  }

  private release(rec: ChunkRecord, reason: FreeReason): void {
    const e = this.live.get(rec.id);
    if (!e || e.chunks.get(rec.chunk) !== rec) return;
    e.chunks.delete(rec.chunk);
    e.freed.set(rec.chunk, reason);
    this.held--;
    this.unschedule(rec);
    this.hooks.free(rec, reason);
    this.settle(rec.id, e);
  }

  /** The producer failed: waiting and future recvs get `err`; chunks nobody has read yet are freed. */
  fail(id: string, err: SidecarError): void {
    const t = this.find(id);
    if (typeof t === 'object' && t.failed) return;
    const e = this.open(id);
    e.failed = err;
    for (const ws of e.waiters.values()) for (const w of ws) { w.cleanup(); w.reject(err); }
    e.waiters.clear();
    for (const rec of [...e.chunks.values()]) if (!rec.handedOut && rec.pushes <= 0) this.release(rec, 'failed');
    this.settle(id, e);
  }

  /** Whether a recv waits for chunk `chunk` of `id`. */
  waitingOn(id: string, chunk: number): boolean {
    return this.live.get(id)?.waiters.has(chunk) ?? false;
  }

  /** Whether `rec` is held (not freed yet, e.g. at once because nobody needed it). */
  holds(rec: ChunkRecord): boolean {
    return this.live.get(rec.id)?.chunks.get(rec.chunk) === rec;
  }

  /** Every chunk held. */
  heldChunks(): ChunkRecord[] {
    const out: ChunkRecord[] = [];
    for (const e of this.live.values()) out.push(...e.chunks.values());
    return out;
  }

  isFailed(id: string): boolean {
    const t = this.find(id);
    return typeof t === 'object' && t.failed !== undefined;
  }

  /**
   * Frees chunks past their expiry (returns them), opens a new tombstone generation every `tombstoneMs / 4`
   * and drops the generations closed at least `tombstoneMs` ago.
   */
  sweep(now: number): ChunkRecord[] {
    const expired: ChunkRecord[] = [];
    const expire = (rec: ChunkRecord) => { expired.push(rec); this.release(rec, 'expired'); };
    for (const rec of [...this.overdue]) if (rec.pushes <= 0) expire(rec);
    const nowSlot = Math.floor(now / this.slotMs);
    const due = nowSlot - this.sweptSlot > this.wheel.size
      ? [...this.wheel.keys()].filter((k) => k <= nowSlot)
      : Array.from({ length: Math.max(0, nowSlot - this.sweptSlot) }, (_, i) => this.sweptSlot + 1 + i);
    for (const k of due) {
      const set = this.wheel.get(k);
      if (!set) continue;
      for (const rec of [...set]) {
        if (rec.expiresAt > now) continue; // the current slot: not yet
        if (rec.pushes <= 0) expire(rec);
        else { set.delete(rec); this.overdue.add(rec); }
      }
      if (set.size === 0) this.wheel.delete(k);
    }
    this.sweptSlot = Math.max(this.sweptSlot, nowSlot - 1);

    const current = this.generations[this.generations.length - 1]!;
    if (now - this.openedAt >= this.tombstoneMs / 4 && current.tombs.size > 0) {
      current.closedAt = now;
      this.openedAt = now;
      this.generations.push({ tombs: new Map(), closedAt: Infinity });
    }
    while (this.generations.length > 1 && now - this.generations[0]!.closedAt >= this.tombstoneMs) this.generations.shift();
    return expired;
  }

  /** Rejects every waiter (the sidecar is stopping). */
  close(err: SidecarError): void {
    for (const [id, e] of [...this.live]) {
      for (const ws of e.waiters.values()) for (const w of ws) { w.cleanup(); w.reject(err); }
      e.waiters.clear();
      this.settle(id, e);
    }
  }
}
