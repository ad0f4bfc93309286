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
 *  - an id's entry (with the tombstones that let late recvs fail fast) is dropped once it is idle past the ttl.
 */
import { SidecarError } from '../errors.js';
import type { Cancellable } from '../cancel.js';
import type { Allocation } from '../shm/memory.js';
import type { ChunkKind } from '../wire/protocol.js';
import type { DType } from '../tensor.js';

export interface ChunkRecord {
  id: string;
  chunk: number;
  kind: ChunkKind;
  dtype?: DType;
  shape?: number[];
  size: number;
  alloc: Allocation;
  producerRank: number;
  groups: number[][]; // destination groups served by this node
  doneRanks: Set<number>; // local consumer ranks that marked it done
  pushes: number; // pushes to other nodes not yet written
  expiresAt: number;
  handedOut: boolean;
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
  touchedAt: number;
}

export interface LedgerHooks {
  free(rec: ChunkRecord, reason: FreeReason): void;
  /** Whether `rank` has a client connected to this sidecar. */
  live(rank: number): boolean;
}

export class Ledger {
  private readonly ids = new Map<string, IdEntry>();

  constructor(private readonly hooks: LedgerHooks, private readonly tombstoneMs: number) {}

  private entry(id: string): IdEntry {
    let e = this.ids.get(id);
    if (!e) {
      e = { numChunks: undefined, chunks: new Map(), freed: new Map(), waiters: new Map(), failed: undefined, touchedAt: Date.now() };
      this.ids.set(id, e);
    }
    e.touchedAt = Date.now();
    return e;
  }

  get chunkCount(): number {
    let n = 0;
    for (const e of this.ids.values()) n += e.chunks.size;
    return n;
  }
  get idCount(): number { return this.ids.size; }

  /**
   * Adds a chunk and wakes its waiters. Returns 'duplicate' (the same chunk is already held: a retry or a
   * second sender of the group) or 'failed' (the id failed): the caller then frees `rec.alloc`.
   */
  add(rec: ChunkRecord, numChunks?: number): 'added' | 'duplicate' | 'failed' {
    const e = this.entry(rec.id);
    if (e.failed) return 'failed';
    if (e.chunks.has(rec.chunk) || e.freed.has(rec.chunk)) return 'duplicate';
    e.chunks.set(rec.chunk, rec);
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
    const e = this.entry(id);
    e.numChunks = n;
    for (const [chunk, ws] of e.waiters) {
      if (chunk < n) continue;
      e.waiters.delete(chunk);
      for (const w of ws) { w.cleanup(); w.resolve(null); }
    }
  }

  private lookup(e: IdEntry, id: string, chunk: number): ChunkRecord | null | undefined {
    if (e.failed) throw e.failed;
    const rec = e.chunks.get(chunk);
    if (rec) { rec.handedOut = true; return rec; }
    if (e.numChunks !== undefined && chunk >= e.numChunks) return null;
    const freed = e.freed.get(chunk);
    if (freed === 'expired') throw new SidecarError('SIDECAR_EXPIRED', `chunk ${chunk} of ${id} expired before it was consumed`);
    if (freed) throw new SidecarError('SIDECAR_ALREADY_CONSUMED', `chunk ${chunk} of ${id} was already consumed and freed`);
    return undefined;
  }

  /** The chunk, or null past the last chunk; waits until `deadline` for it to arrive. */
  recv(id: string, chunk: number, rank: number, deadline: number, signal?: Cancellable): Promise<ChunkRecord | null> {
    const e = this.entry(id);
    try {
      const now = this.lookup(e, id, chunk);
      if (now !== undefined) return Promise.resolve(now);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      let set = e.waiters.get(chunk);
      if (!set) e.waiters.set(chunk, (set = new Set()));
      const drop = () => { set!.delete(w); if (set!.size === 0 && e.waiters.get(chunk) === set) e.waiters.delete(chunk); };
      const fail = (err: Error) => { w.cleanup(); drop(); reject(err); };
      const timer = setTimeout(() => fail(new SidecarError('SIDECAR_TIMEOUT', `chunk ${chunk} of ${id} did not arrive before the deadline`)),
        Math.max(0, deadline - Date.now()));
      const onAbort = () => fail(new SidecarError('SIDECAR_ABORTED', `recv of chunk ${chunk} of ${id} was cancelled`));
      const w: Waiter = { rank, resolve, reject, cleanup: () => { clearTimeout(timer); signal?.removeEventListener('abort', onAbort); } };
      set.add(w);
      if (signal?.aborted) onAbort();
      else signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Records that `ranks` consumed the chunk; frees it when nobody else needs it. Idempotent. */
  done(id: string, chunk: number, rank: number, wholeGroup: boolean): void {
    const e = this.ids.get(id);
    const rec = e?.chunks.get(chunk);
    if (!e || !rec) {
      if (e?.freed.has(chunk)) return;
      throw new SidecarError('SIDECAR_NOT_FOUND', `this sidecar holds no chunk ${chunk} of ${id}`);
    }
    e.touchedAt = Date.now();
    const ranks = wholeGroup ? (rec.groups.find((g) => g.includes(rank)) ?? [rank]) : [rank];
    for (const r of ranks) rec.doneRanks.add(r);
    this.maybeFree(rec);
  }

  /** `rank`'s last client disconnected: chunks its group-mates are done with no longer wait for it. */
  rankGone(rank: number): void {
    for (const e of this.ids.values()) {
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
    const e = this.ids.get(rec.id);
    if (!e || e.chunks.get(rec.chunk) !== rec) return;
    e.chunks.delete(rec.chunk);
    e.freed.set(rec.chunk, reason);
    e.touchedAt = Date.now();
    this.hooks.free(rec, reason);
  }

  /** The producer failed: waiting and future recvs get `err`; chunks nobody has read yet are freed. */
  fail(id: string, err: SidecarError): void {
    const e = this.entry(id);
    if (e.failed) return;
    e.failed = err;
    for (const ws of e.waiters.values()) for (const w of ws) { w.cleanup(); w.reject(err); }
    e.waiters.clear();
    for (const rec of [...e.chunks.values()]) if (!rec.handedOut && rec.pushes <= 0) this.release(rec, 'failed');
  }

  isFailed(id: string): boolean { return this.ids.get(id)?.failed !== undefined; }

  /** Frees chunks past their expiry (returns them) and forgets ids idle for longer than the tombstone time. */
  sweep(now: number): ChunkRecord[] {
    const expired: ChunkRecord[] = [];
    for (const [id, e] of this.ids) {
      for (const rec of [...e.chunks.values()]) {
        if (rec.expiresAt <= now && rec.pushes <= 0) { expired.push(rec); this.release(rec, 'expired'); }
      }
      if (e.chunks.size === 0 && e.waiters.size === 0 && now - e.touchedAt >= this.tombstoneMs) this.ids.delete(id);
    }
    return expired;
  }

  /** Rejects every waiter (the sidecar is stopping). */
  close(err: SidecarError): void {
    for (const e of this.ids.values()) {
      for (const ws of e.waiters.values()) for (const w of ws) { w.cleanup(); w.reject(err); }
      e.waiters.clear();
    }
  }
}
