/**
 * Eric's engine loop: enqueued requests go to the scheduler; while fewer than `maxInflightBatches` batches
 * run, the next batch goes to the worker pool (all ranks). Results complete items; a request is answered
 * once all its items are done. A batch that fails as a whole (e.g. one item the model rejects) is retried
 * item by item, so only the bad item fails and the other requests of the batch are unaffected. Requests
 * whose deadline passes while items still wait are answered EXECUTOR_DEADLINE_EXCEEDED; cancelled requests
 * are dropped. The pool's death is fatal (the process exits; the router reports 503).
 */
import type { Logger } from '../../../lib/log.js';
import { ExecutorErrorCode, executorError, toWire } from '../../../lib/executor-errors.js';
import type { EngineServer } from '../../common/engine-process.js';
import { type Handlers, type EngineWork, type ItemResult, itemsFromWire } from '../../../lib/executor-protocol.js';
import type { WorkerPool } from '../../common/worker-pool.js';
import { type Batch, type BatchEntry, Scheduler } from '../../../policies/eric-scheduler.js';

/** How often requests whose deadline passed are dropped from the queue. */
const EXPIRY_SWEEP_MS = 250;

export interface EngineOptions {
  maxBatchSize?: number;
  /** Batches handed to the workers at once (the next one is queued while one runs). @default 2 */
  maxInflightBatches?: number;
  log: Logger;
}

export class EricEngine {
  private readonly scheduler: Scheduler;
  private inflight = 0;
  private readonly maxInflight: number;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly pool: Pick<WorkerPool, 'run' | 'alive'>,
    private readonly server: Pick<EngineServer, 'respond'>,
    private readonly o: EngineOptions,
  ) {
    this.scheduler = new Scheduler(o.maxBatchSize);
    this.maxInflight = o.maxInflightBatches ?? 2;
    this.sweeper = setInterval(() => this.expire(), EXPIRY_SWEEP_MS).unref();
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  /** The router link's handlers. */
  handlers(): Handlers<EngineWork> {
    return {
      enqueue: (m, blobs) => {
        this.scheduler.enqueue({ requestId: m.requestId, deadline: m.deadline, items: itemsFromWire(m.items, blobs) });
        this.pump();
      },
      cancel: (m) => {
        if (this.scheduler.drop(m.requestId)) this.o.log.debug({ requestId: m.requestId, reason: m.reason }, 'request cancelled');
      },
    };
  }

  private expire(): void {
    for (const req of this.scheduler.expire(Date.now())) {
      const err = executorError(ExecutorErrorCode.DEADLINE_EXCEEDED, 'the request passed its deadline while queued in the engine');
      void this.server.respond(req.requestId, [], toWire(err));
    }
  }

  private pump(): void {
    if (this.inflight < this.maxInflight) this.expire();
    while (this.inflight < this.maxInflight && this.scheduler.hasWaiting()) {
      const batch = this.scheduler.schedule();
      if (!batch) return;
      this.inflight++;
      void this.runBatch(batch).finally(() => {
        this.inflight--;
        this.pump();
      });
    }
  }

  private async runEntries(batch: Batch, entries: BatchEntry[]): Promise<ItemResult[]> {
    return this.pool.run({ modality: batch.modality, modelId: batch.modelId, batchSize: entries.length }, entries.map((e) => e.item));
  }

  private async runBatch(batch: Batch): Promise<void> {
    let results: ItemResult[];
    try {
      results = await this.runEntries(batch, batch.entries);
    } catch (e) {
      if (!this.pool.alive) return; // fatal; main.ts exits
      if (batch.entries.length === 1) {
        results = [{ id: batch.entries[0]!.item.id, ok: false, error: toWire(e) }];
      } else {
        this.o.log.warn({ err: (e as Error).message, items: batch.entries.length }, 'batch failed; retrying its items one by one');
        results = [];
        for (const entry of batch.entries) {
          try {
            results.push(...(await this.runEntries(batch, [entry])));
          } catch (err) {
            if (!this.pool.alive) return;
            results.push({ id: entry.item.id, ok: false, error: toWire(err) });
          }
        }
      }
    }
    batch.entries.forEach((entry, i) => {
      const r = results[i] ?? { id: entry.item.id, ok: false, error: toWire(executorError(ExecutorErrorCode.PROTOCOL, 'the worker returned no result for this item')) };
      const done = this.scheduler.complete(entry.requestId, { ...r, meta: { ...r.meta, batchSize: batch.entries.length } });
      if (done) void this.server.respond(done.req.requestId, done.results);
    });
  }
}
