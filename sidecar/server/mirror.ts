/**
 * Records in the Store where each chunk produced on this node for another node's consumers is held (node, location,
 * dtype, shape, size, producer, expiry) until this sidecar frees it, so that a consumer's sidecar on another node
 * can find it and dial this one (finder.ts).
 *
 * Writes are asynchronous and never on a transfer's critical path (a Redis write costs ~120 µs, the
 * whole same-node round trip has a 300 µs budget), and with `delayMs` only chunks still held that long get an
 * entry: a chunk consumed at once (the hot path) costs a Map entry, not two Store writes. A consumer's sidecar
 * looks a chunk up only after its recv waited longer than that (finder.ts). Operations on one key are chained, so a
 * delete never overtakes its put. A failed write is logged and counted, not retried: the sidecar's own ledger, not the
 * Store, is the authority on what it holds (an entry a failed delete left is reaped after its expiry, lease.ts).
 */
import type { Store, TensorChunkMeta } from '../../lib/store.js';
import type { Logger } from '../../lib/log.js';

export type ChunkIndex = Pick<Store, 'putChunk' | 'deleteChunk'>;

export class StoreMirror {
  private readonly tails = new Map<string, Promise<void>>();
  /** Entries not written yet, in the order they fall due (the delay is constant). */
  private readonly pending = new Map<string, { meta: TensorChunkMeta; due: number }>();
  private timer: NodeJS.Timeout | undefined;
  /** Entries written, and entries never written because their chunk was freed within the delay. */
  written = 0;
  skipped = 0;
  errors = 0;

  /** `delayMs`: an entry is written only for a chunk still held that long after it was stored (0: at once). */
  constructor(private readonly store: ChunkIndex | undefined, private readonly log: Logger, private readonly delayMs = 0) {}

  get enabled(): boolean { return this.store !== undefined; }

  private chain(key: string, op: () => Promise<unknown>): void {
    if (!this.store) return;
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(op).then(() => {}, (err: Error) => {
      this.errors++;
      this.log.warn({ key, err: err.message }, 'store mirror write failed');
    });
    this.tails.set(key, next);
    void next.then(() => { if (this.tails.get(key) === next) this.tails.delete(key); });
  }

  put(meta: TensorChunkMeta): void {
    if (!this.store) return;
    const key = `${meta.id}/${meta.chunk}`;
    if (this.delayMs <= 0) { this.write(key, meta); return; }
    this.pending.set(key, { meta, due: Date.now() + this.delayMs });
    this.arm();
  }

  /** Deletes the entry (only the producing node writes one per chunk: ids are unique per transfer). */
  remove(id: string, chunk: number): void {
    const key = `${id}/${chunk}`;
    if (this.pending.delete(key)) { this.skipped++; return; } // freed before its entry was due: nothing to undo
    this.chain(key, () => this.store!.deleteChunk(id, chunk));
  }

  private write(key: string, meta: TensorChunkMeta): void {
    this.written++;
    this.chain(key, () => this.store!.putChunk(meta));
  }

  private arm(): void {
    if (this.timer || this.pending.size === 0) return;
    const first = this.pending.values().next().value!;
    this.timer = setTimeout(() => { this.timer = undefined; this.writeDue(); }, Math.max(0, first.due - Date.now()));
    this.timer.unref();
  }

  private writeDue(): void {
    const now = Date.now();
    for (const [key, p] of this.pending) {
      if (p.due > now) break;
      this.pending.delete(key);
      this.write(key, p.meta);
    }
    this.arm();
  }

  /** Drops the entries not written yet and resolves once every write made has settled (the sidecar is stopping). */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.pending.clear();
    while (this.tails.size > 0) await Promise.all([...this.tails.values()]);
  }
}
