/**
 * Records in the Store where each chunk produced on this node is held (node, location, dtype, shape, size,
 * producer, expiry) until this sidecar frees it, so that a consumer's sidecar on another node can find it and
 * dial this one (finder.ts).
 *
 * Writes are asynchronous and never on a transfer's critical path (a Redis write costs ~120 µs, the
 * whole same-node round trip has a 300 µs budget). Operations on one key are chained, so a delete never
 * overtakes its put. A failed write is logged and counted, not retried: the sidecar's own ledger, not the
 * Store, is the authority on what it holds (an entry a failed delete left is reaped after its expiry, lease.ts).
 */
import type { Store, TensorChunkMeta } from '../../control/store/types.js';
import type { Logger } from '../../lib/log.js';

export type ChunkIndex = Pick<Store, 'putChunk' | 'deleteChunk'>;

export class StoreMirror {
  private readonly tails = new Map<string, Promise<void>>();
  errors = 0;

  constructor(private readonly store: ChunkIndex | undefined, private readonly log: Logger) {}

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
    this.chain(`${meta.id}/${meta.chunk}`, () => this.store!.putChunk(meta));
  }

  /** Deletes the entry (only the producing node writes one per chunk: ids are unique per transfer). */
  remove(id: string, chunk: number): void {
    this.chain(`${id}/${chunk}`, () => this.store!.deleteChunk(id, chunk));
  }

  /** Resolves once every queued write has settled. */
  async flush(): Promise<void> {
    while (this.tails.size > 0) await Promise.all([...this.tails.values()]);
  }
}
