/**
 * The engine's device workers: one worker_thread per device (the tensor-parallel degree), each with its own
 * onnxruntime session, fed through a shared-memory ring and answering through another. Every job is
 * broadcast to all workers (each runs its shard); the job's results are the leader's (rank 0), and a job
 * fails if any rank fails. Worker side: worker-runtime.ts.
 *
 * A worker that exits or throws at top level is fatal: pending jobs fail with EXECUTOR_WORKER_DIED, the
 * rings and the all-reduce are closed so no rank waits forever, and `dead` resolves (the engine exits; the
 * router reports 503; the task manager restarts the executor).
 */
import type { Worker } from 'node:worker_threads';
import type { Logger } from '../../lib/log.js';
import { ShmAllReduce, type AllReduceHandle } from './all-reduce.js';
import { ExecutorError, ExecutorErrorCode, executorError, fromWire } from '../../lib/executor-errors.js';
import {
  type Handlers, type Item, type ItemResult, type Tensors, WorkerOutbound, derefTensors, dispatch, fromFrames, itemsToWire,
  resultsFromWire, toFrames,
} from '../../lib/executor-protocol.js';
import { ShmRing } from './shm-ring.js';
import { startThread } from './thread.js';

export interface WorkerPoolOptions {
  /** The worker module (it calls `serveWorker` from worker-runtime.ts). */
  script: URL;
  /** Number of workers = devices = tensor-parallel degree. */
  size: number;
  /** Executor-specific settings every worker receives (structured-cloneable). */
  workerData?: unknown;
  /** Capacity of each ring (power of two). @default 16 MiB */
  ringBytes?: number;
  /** Floats per all-reduce step. @default 65536 */
  reduceSlotFloats?: number;
  /** How long workers may take to load their models. @default 120000 */
  readyTimeoutMs?: number;
  log: Logger;
}

/** What every worker thread receives as workerData. */
export interface WorkerBootstrap {
  rank: number;
  size: number;
  toWorker: SharedArrayBuffer;
  fromWorker: SharedArrayBuffer;
  reduce: AllReduceHandle;
  data: unknown;
}

export interface StreamEvent { itemId: string; seq: number; meta?: Record<string, unknown>; tensors: Tensors }

interface PendingJob {
  results: (ItemResult[] | undefined)[];
  remaining: number;
  error?: ExecutorError;
  onStream?: (e: StreamEvent) => void;
  resolve: (r: ItemResult[]) => void;
  reject: (e: Error) => void;
}

interface Slot { worker: Worker; toWorker: ShmRing; fromWorker: ShmRing }

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly reduce: ShmAllReduce;
  private readonly jobs = new Map<number, PendingJob>();
  private nextJob = 1;
  private reduceDirty = false;
  private idleWaiters: (() => void)[] = [];
  private failure: ExecutorError | undefined;
  private markDead!: (e: ExecutorError) => void;
  /** Resolves with the cause when any worker dies (never rejects). */
  readonly dead: Promise<ExecutorError> = new Promise((resolve) => { this.markDead = resolve; });

  private constructor(private readonly opts: WorkerPoolOptions) {
    this.reduce = ShmAllReduce.create(opts.size, opts.reduceSlotFloats ?? 1 << 16);
  }

  /** Starts the workers and waits until every one has loaded (or fails with the first worker's error). */
  static async start(opts: WorkerPoolOptions): Promise<WorkerPool> {
    const pool = new WorkerPool(opts);
    try {
      await pool.spawnAll();
    } catch (e) {
      await pool.close();
      throw e;
    }
    return pool;
  }

  get size(): number { return this.opts.size; }
  get alive(): boolean { return this.failure === undefined; }

  private async spawnAll(): Promise<void> {
    const ready = Array.from({ length: this.opts.size }, (_, rank) => this.spawn(rank));
    const timeoutMs = this.opts.readyTimeoutMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(executorError(ExecutorErrorCode.WORKER_DIED, `workers did not become ready within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([Promise.all(ready), timeout, this.dead.then((e) => Promise.reject(e))]);
    } finally {
      clearTimeout(timer);
    }
  }

  private spawn(rank: number): Promise<void> {
    const bytes = this.opts.ringBytes ?? 1 << 24;
    const toWorker = ShmRing.create(bytes);
    const fromWorker = ShmRing.create(bytes);
    const boot: WorkerBootstrap = {
      rank, size: this.opts.size, toWorker: toWorker.sab, fromWorker: fromWorker.sab, reduce: this.reduce.handle, data: this.opts.workerData,
    };
    const worker = startThread(this.opts.script, { workerData: boot });
    this.slots[rank] = { worker, toWorker, fromWorker };
    worker.on('error', (err) => this.fail(executorError(ExecutorErrorCode.WORKER_DIED, `worker ${rank} crashed: ${err.message}`)));
    worker.on('exit', (code) => {
      if (this.failure === undefined) this.fail(executorError(ExecutorErrorCode.WORKER_DIED, `worker ${rank} exited with code ${code}`));
    });
    return new Promise<void>((resolve, reject) => {
      let started = false;
      const handlers: Handlers<WorkerOutbound> = {
        ready: () => { started = true; resolve(); },
        fatal: (m) => {
          const e = fromWire(m.error);
          if (!started) reject(e);
          this.fail(executorError(ExecutorErrorCode.WORKER_DIED, `worker ${rank} failed: ${e.message}`, { cause: m.error }));
        },
        done: (m, blobs) => this.settle(rank, m.jobId, resultsFromWire(m.items, blobs)),
        failed: (m) => this.settle(rank, m.jobId, fromWire(m.error)),
        stream: (m, blobs) => {
          if (rank === 0) this.jobs.get(m.jobId)?.onStream?.({ itemId: m.itemId, seq: m.seq, meta: m.meta, tensors: derefTensors(m.tensors, blobs) });
        },
      };
      void this.readLoop(rank, fromWorker, handlers);
    });
  }

  private async readLoop(rank: number, ring: ShmRing, handlers: Handlers<WorkerOutbound>): Promise<void> {
    while (!ring.closed) {
      let parts: Uint8Array[];
      try {
        parts = await ring.read();
      } catch {
        return; // closed
      }
      try {
        const p = fromFrames(parts, WorkerOutbound, `worker ${rank} → engine`);
        dispatch(handlers, p.header, p.blobs);
      } catch (e) {
        this.fail(e instanceof ExecutorError ? e : executorError(ExecutorErrorCode.PROTOCOL, (e as Error).message));
        return;
      }
    }
  }

  private settle(rank: number, jobId: number, outcome: ItemResult[] | ExecutorError): void {
    const job = this.jobs.get(jobId);
    if (!job) return;
    // A rank that fails mid-job aborts the all-reduce, so the other ranks fail too with CHANNEL_CLOSED; their
    // reports may arrive first (separate rings). The job's error is the root cause, not the consequence.
    if (outcome instanceof ExecutorError) {
      if (job.error === undefined || job.error.code === ExecutorErrorCode.CHANNEL_CLOSED) job.error = outcome;
    }
    else job.results[rank] = outcome;
    if (--job.remaining > 0) return;
    this.jobs.delete(jobId);
    if (job.error) {
      if (this.opts.size > 1) { this.reduceDirty = true; this.reduce.abort(); }
      job.reject(job.error);
    } else {
      job.resolve(job.results[0]!);
    }
    if (this.jobs.size === 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /**
   * Runs one job on every worker. Resolves with the leader's per-item results; rejects with the first rank's
   * error (the caller may retry items one by one to isolate a bad one).
   */
  async run(meta: Record<string, unknown>, items: readonly Item[], onStream?: (e: StreamEvent) => void): Promise<ItemResult[]> {
    if (this.failure) throw this.failure;
    let resetReduce = false;
    if (this.reduceDirty) {
      // A failed TP job left the all-reduce aborted: reset it once no rank is inside a job.
      while (this.jobs.size > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
      if (this.failure) throw this.failure;
      if (this.reduceDirty) { this.reduce.reset(); this.reduceDirty = false; resetReduce = true; }
    }
    const jobId = this.nextJob++;
    const blobs: Uint8Array[] = [];
    const header = { type: 'job' as const, jobId, meta, items: itemsToWire(items, blobs), ...(resetReduce ? { resetReduce } : {}) };
    const frames = toFrames({ header, blobs });
    const done = new Promise<ItemResult[]>((resolve, reject) => {
      this.jobs.set(jobId, { results: [], remaining: this.opts.size, resolve, reject, ...(onStream ? { onStream } : {}) });
    });
    await Promise.all(this.slots.map((s) => s.toWorker.write(frames))).catch((e: Error) => {
      this.fail(e instanceof ExecutorError ? e : executorError(ExecutorErrorCode.WORKER_DIED, e.message));
    });
    return done;
  }

  private fail(err: ExecutorError): void {
    if (this.failure) return;
    this.failure = err;
    this.opts.log.error({ err: err.message }, 'worker pool failed');
    this.reduce.abort();
    for (const s of this.slots) { s?.toWorker.close(); s?.fromWorker.close(); }
    for (const job of this.jobs.values()) job.reject(err);
    this.jobs.clear();
    for (const w of this.idleWaiters.splice(0)) w();
    this.markDead(err);
  }

  /** Asks every worker to stop (they release their sessions and sidecar clients), then terminates stragglers. */
  async close(graceMs = 5_000): Promise<void> {
    const slots = this.slots.filter(Boolean);
    const exits = slots.map((s) => new Promise<void>((r) => { if (s.worker.threadId < 0) r(); else s.worker.once('exit', () => r()); }));
    if (!this.failure) {
      this.failure = executorError(ExecutorErrorCode.WORKER_DIED, 'the worker pool is closed');
      const stop = toFrames({ header: { type: 'stop' }, blobs: [] });
      await Promise.all(slots.map((s) => s.toWorker.write(stop).catch(() => undefined)));
    }
    const timer = setTimeout(() => { for (const s of slots) void s.worker.terminate(); }, graceMs);
    await Promise.all(exits);
    clearTimeout(timer);
    for (const s of slots) { s.toWorker.close(); s.fromWorker.close(); }
    for (const job of this.jobs.values()) job.reject(this.failure);
    this.jobs.clear();
  }
}
