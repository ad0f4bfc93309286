/**
 * Geri's engine loop (the reference's engine core): enqueued requests go to the scheduler; when the worker is
 * idle, the next batch (consecutive requests with identical generation parameters) runs on it. One batch at a
 * time: requests arriving meanwhile wait and form the next batch, as in the reference's schedule → execute →
 * respond loop. The worker answers per item, so a bad item fails alone; a batch that fails as a whole fails
 * each of its requests with that error. Audio chunks are forwarded to the router as they come (`stream`),
 * always before the request's `response`.
 *
 * Requests whose deadline passes while queued are answered EXECUTOR_DEADLINE_EXCEEDED; cancelled ones are
 * dropped, and a running one is stopped through its cancel flag (the worker checks it between audio chunks
 * and before each image). The worker's death is fatal (main.ts exits).
 */
import type { Logger } from '../../../lib/log.js';
import { ExecutorErrorCode, executorError, toWire, type WireError } from '../../../lib/executor-errors.js';
import { type EngineWork, type Handlers, type Item, type ItemResult, type Tensors, itemsFromWire } from '../../../lib/executor-protocol.js';
import type { StreamEvent } from '../../common/worker-pool.js';
import type { CancelFlags } from '../cancel-flags.js';
import { GenParams, type Modality } from '../../../lib/geri-protocol.js';
import { type ScheduledRequest, type SchedulerBatch, Scheduler } from '../../../policies/geri-scheduler.js';

/** How often requests whose deadline passed are dropped from the queue. */
const EXPIRY_SWEEP_MS = 250;

/** Where answers go (EngineServer in the engine process). */
export interface EngineLink {
  respond(requestId: string, items: readonly ItemResult[], error?: WireError): Promise<void>;
  stream(requestId: string, itemId: string, seq: number, meta?: Record<string, unknown>, tensors?: Tensors): Promise<void>;
}

/** What runs batches (the WorkerPool). */
export interface BatchRunner {
  readonly alive: boolean;
  run(meta: Record<string, unknown>, items: readonly Item[], onStream?: (e: StreamEvent) => void): Promise<ItemResult[]>;
}

export interface GeriEngineOptions {
  modality: Modality;
  /** Requests per batch; undefined = unlimited (in practice: the number of cancel slots). */
  maxBatchSize?: number;
  /** Shared with the worker, which stops a running item once its flag is raised. */
  cancelFlags?: CancelFlags;
  log: Logger;
}

export class GeriEngine {
  private readonly scheduler: Scheduler;
  /** Requests of the batch on the worker and their cancel slots, by request id (a cancelled one is removed). */
  private readonly running = new Map<string, { req: ScheduledRequest; slot?: number }>();
  private busy = false;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly runner: BatchRunner, private readonly link: EngineLink, private readonly o: GeriEngineOptions) {
    this.scheduler = new Scheduler(o.maxBatchSize ?? o.cancelFlags?.slots);
    this.sweeper = setInterval(() => this.expire(), EXPIRY_SWEEP_MS).unref();
  }

  close(): void {
    clearInterval(this.sweeper);
  }

  /** The router link's handlers. */
  handlers(): Handlers<EngineWork> {
    return {
      enqueue: (m, blobs) => this.submit(m.requestId, m.deadline, itemsFromWire(m.items, blobs)),
      cancel: (m) => {
        const running = this.running.get(m.requestId);
        if (running?.slot !== undefined) this.o.cancelFlags?.cancel(running.slot);
        if (this.scheduler.drop(m.requestId) || this.running.delete(m.requestId)) this.o.log.debug({ requestId: m.requestId, reason: m.reason }, 'request cancelled');
      },
    };
  }

  /** One request = one item whose meta holds its generation parameters. */
  submit(requestId: string, deadline: number, items: Item[]): void {
    const item = items[0];
    const params = GenParams.safeParse(item?.meta);
    let problem: string | undefined;
    if (items.length !== 1) problem = `a Geri request holds exactly one item, got ${items.length}`;
    else if (!params.success) problem = `item meta: ${params.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`;
    else if (params.data.kind !== this.o.modality) problem = `this engine generates ${this.o.modality}, not ${params.data.kind}`;
    if (problem || !item || !params.success) {
      void this.link.respond(requestId, [], toWire(executorError(ExecutorErrorCode.PROTOCOL, problem ?? 'bad request')));
      return;
    }
    const embeddingDataId = typeof item.meta.embeddingDataId === 'string' ? item.meta.embeddingDataId : item.id;
    this.scheduler.enqueue({ requestId, embeddingDataId, deadline, params: params.data, item });
    this.pump();
  }

  private expire(): void {
    for (const r of this.scheduler.expire(Date.now())) {
      void this.link.respond(r.requestId, [], toWire(executorError(ExecutorErrorCode.DEADLINE_EXCEEDED, 'the request passed its deadline while queued in the engine')));
    }
  }

  private pump(): void {
    if (this.busy) return;
    this.expire();
    const batch = this.scheduler.schedule();
    if (!batch) return;
    this.busy = true;
    void this.runBatch(batch).finally(() => {
      this.busy = false;
      this.pump();
    });
  }

  private async runBatch(batch: SchedulerBatch): Promise<void> {
    const byItem = new Map<string, ScheduledRequest>();
    const items = batch.requests.map((r) => {
      const slot = this.o.cancelFlags?.claim();
      this.running.set(r.requestId, { req: r, ...(slot !== undefined ? { slot } : {}) });
      byItem.set(r.item!.id, r);
      return slot === undefined ? r.item! : { ...r.item!, meta: { ...r.item!.meta, cancelSlot: slot } };
    });
    const onStream = (e: StreamEvent) => {
      const r = byItem.get(e.itemId);
      if (r && this.running.has(r.requestId)) void this.link.stream(r.requestId, e.itemId, e.seq, e.meta, e.tensors);
    };
    let results: ItemResult[] = [];
    let failure: WireError | undefined;
    try {
      results = await this.runner.run({ kind: batch.params.kind, batchSize: batch.length }, items, onStream);
    } catch (e) {
      if (!this.runner.alive) return; // fatal: main.ts exits and the router fails every request
      failure = toWire(e);
      this.o.log.warn({ err: failure.message, requests: batch.length }, 'batch failed');
    }
    for (const r of batch.requests) {
      if (!this.running.delete(r.requestId)) continue; // cancelled meanwhile
      const id = r.item!.id;
      const res = results.find((x) => x.id === id)
        ?? { id, ok: false, error: failure ?? toWire(executorError(ExecutorErrorCode.PROTOCOL, 'the worker returned no result for this item')) };
      void this.link.respond(r.requestId, [{ ...res, meta: { ...res.meta, batchSize: batch.length } }]);
    }
  }
}
