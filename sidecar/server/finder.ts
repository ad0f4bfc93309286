/**
 * Finds, through the Store, which sidecar holds a chunk that a local recv is waiting for, so that this sidecar can
 * dial it (the holder pushes what it has for this node on the link this node dials).
 *
 * Off the hot path: a recv answered at once, or whose chunk arrives within `firstDelayMs` (the usual case once a
 * link exists: the producer's sidecar pushes as soon as the chunk is put), costs one array entry and no Store
 * call. Only a recv still waiting after `firstDelayMs` is looked up, then again with a doubling delay (up to
 * `maxDelayMs`) while it keeps waiting: the chunk may not be produced yet, or its holder may have moved. One timer
 * serves every entry; it runs only while entries are queued.
 */
import type { TensorChunkMeta } from '../../lib/store.js';

export interface FinderHooks {
  /** The Store's entry for a chunk (who holds it). */
  lookup(id: string, chunk: number): Promise<TensorChunkMeta | undefined>;
  /** Whether a local recv still waits for the chunk. */
  waiting(id: string, chunk: number): boolean;
  /** The chunk is held by `meta.node`; `again` when it was already found before (its holder may have moved). */
  found(meta: TensorChunkMeta, again: boolean): void;
  /** A lookup failed (the Store is unavailable): logged by the caller; the entry is retried later. */
  failed(err: Error): void;
}

export interface FinderOptions {
  /** @default 50 */
  firstDelayMs?: number;
  /** @default 2000 */
  maxDelayMs?: number;
  clock?: () => number;
}

interface Wanted {
  id: string;
  chunk: number;
  due: number;
  delay: number;
  found: boolean;
}

export class ChunkFinder {
  private queue: Wanted[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly first: number;
  private readonly max: number;
  private readonly clock: () => number;
  private stopped = false;
  lookups = 0;

  constructor(private readonly hooks: FinderHooks, o: FinderOptions = {}) {
    this.first = o.firstDelayMs ?? 50;
    this.max = o.maxDelayMs ?? 2000;
    this.clock = o.clock ?? Date.now;
  }

  /** A local recv started waiting for chunk `chunk` of `id`. */
  wanted(id: string, chunk: number): void {
    this.queue.push({ id, chunk, due: this.clock() + this.first, delay: this.first, found: false });
    this.arm();
  }

  private arm(): void {
    if (this.stopped || this.timer || this.queue.length === 0) return;
    this.timer = setTimeout(() => { this.timer = undefined; this.tick(); }, Math.max(1, this.first / 2));
    this.timer.unref();
  }

  private tick(): void {
    const now = this.clock();
    const keep: Wanted[] = [];
    for (const w of this.queue) {
      if (!this.hooks.waiting(w.id, w.chunk)) continue;
      if (w.due > now) { keep.push(w); continue; }
      this.look(w);
    }
    this.queue = keep;
    this.arm();
  }

  private look(w: Wanted): void {
    this.lookups++;
    this.hooks.lookup(w.id, w.chunk).then(
      (meta) => {
        if (meta) { this.hooks.found(meta, w.found); w.found = true; }
        this.again(w);
      },
      (err: Error) => { this.hooks.failed(err); this.again(w); },
    );
  }

  private again(w: Wanted): void {
    w.delay = Math.min(this.max, w.delay * 2);
    w.due = this.clock() + w.delay;
    this.queue.push(w);
    this.arm();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue = [];
  }
}
