/**
 * Worker side of worker-pool.ts: call `serveWorker(init)` at the top of a worker module.
 *
 *   serveWorker<MyData>(async (ctx) => {
 *     const session = await ort.InferenceSession.create(path, { intraOpNumThreads: 1 });
 *     return { run: async (job) => job.items.map((it) => ({ id: it.id, ok: true })), close: () => session.release() };
 *   });
 *
 * `init` loads the model (a throw is reported as `fatal` and the pool fails to start); then jobs are read from
 * the ring one at a time and answered with `done` (per-item results) or `failed` (the whole job). With more
 * than one rank, a failed job aborts the all-reduce so the other ranks stop waiting for this one.
 */
import { workerData } from 'node:worker_threads';
import { startTelemetry } from '../../lib/telemetry.js';
import { ShmAllReduce } from './all-reduce.js';
import { toWire } from '../../lib/executor-errors.js';
import {
  type Handlers, type Item, type ItemResult, type Tensors, WorkerInbound, dispatch, fromFrames, itemsFromWire, refTensors, resultsToWire,
  toFrames,
} from '../../lib/executor-protocol.js';
import type { WorkerBootstrap } from './worker-pool.js';
import { ShmRing } from './shm-ring.js';

/** Longest stretch a worker blocks its thread waiting for a job. */
const IDLE_MS = 20;

export interface Job { jobId: number; meta: Record<string, unknown>; items: Item[] }

export interface WorkerContext<D> {
  /** This worker's tensor-parallel rank (0 = leader) and the degree. */
  rank: number;
  size: number;
  /** The executor-specific settings given to WorkerPool.start. */
  data: D;
  /** Sum all-reduce with the other ranks (blocks until every rank contributed). */
  reduce: ShmAllReduce;
  /** Sends a partial output of an item of the current job to the engine (leader only is forwarded). */
  stream(job: Job, itemId: string, seq: number, meta?: Record<string, unknown>, tensors?: Tensors): Promise<void>;
}

/**
 * A job whose computation is over but whose results wait on I/O (e.g. sidecar sends): the worker reads the
 * next job meanwhile and answers this one when `pending` settles. Computation stays strictly one job at a
 * time (tensor-parallel ranks must meet at the same all-reduce steps); only the I/O tail overlaps.
 */
export interface Deferred { pending: Promise<ItemResult[]> }

export interface WorkerHandler {
  run(job: Job): Promise<ItemResult[] | Deferred>;
  close?(): Promise<void> | void;
}

/** Deferred jobs a worker lets run in the background before it waits for the oldest. */
const MAX_DEFERRED = 4;

export async function serveWorker<D>(init: (ctx: WorkerContext<D>) => Promise<WorkerHandler>): Promise<void> {
  const boot = workerData as WorkerBootstrap;
  await startTelemetry(`${process.env.CORNSERVE_EXECUTOR_ID ?? 'executor'}-worker-${boot.rank}`); // a thread has its own SDK
  const inbox = ShmRing.attach(boot.toWorker);
  const outbox = ShmRing.attach(boot.fromWorker);
  const reduce = ShmAllReduce.attach(boot.reduce, boot.rank);
  const send = (header: unknown, blobs: Uint8Array[] = []) => outbox.write(toFrames({ header, blobs }));
  const ctx: WorkerContext<D> = {
    rank: boot.rank, size: boot.size, data: boot.data as D, reduce,
    stream: (job, itemId, seq, meta, tensors) => {
      const blobs: Uint8Array[] = [];
      return send({ type: 'stream', jobId: job.jobId, itemId, seq, ...(meta ? { meta } : {}), tensors: refTensors(tensors, blobs) }, blobs);
    },
  };

  let handler: WorkerHandler;
  try {
    handler = await init(ctx);
  } catch (e) {
    await send({ type: 'fatal', error: toWire(e) }).catch(() => undefined);
    return;
  }
  await send({ type: 'ready', rank: boot.rank, info: {} });

  const done = (jobId: number, results: ItemResult[]) => {
    const out: Uint8Array[] = [];
    return send({ type: 'done', jobId, items: resultsToWire(results, out) }, out);
  };
  const failed = (jobId: number, e: unknown) => send({ type: 'failed', jobId, error: toWire(e) }).catch(() => undefined);
  const deferred = new Set<Promise<unknown>>();
  const runJob = async (m: Extract<WorkerInbound, { type: 'job' }>, blobs: Uint8Array[]) => {
    if (m.resetReduce) reduce.resetLocal();
    let r: ItemResult[] | Deferred;
    try {
      r = await handler.run({ jobId: m.jobId, meta: m.meta, items: itemsFromWire(m.items, blobs) });
    } catch (e) {
      if (boot.size > 1) reduce.abort();
      await failed(m.jobId, e);
      return;
    }
    if (Array.isArray(r)) { await done(m.jobId, r); return; }
    const tail = r.pending.then((results) => done(m.jobId, results), (e: unknown) => failed(m.jobId, e)).finally(() => deferred.delete(tail));
    deferred.add(tail);
    if (deferred.size >= MAX_DEFERRED) await Promise.race(deferred);
  };
  let stopping = false;
  const handlers: Handlers<WorkerInbound> = {
    job: runJob,
    stop: () => { stopping = true; },
  };
  while (!stopping) {
    let parts: Uint8Array[];
    try {
      // Idle in a blocking wait (fast wake-up), returning to the event loop every IDLE_MS; while deferred
      // jobs wait on I/O, wait without blocking so their I/O completes.
      if (deferred.size === 0 && !inbox.waitForData(IDLE_MS)) { await new Promise((r) => setImmediate(r)); continue; }
      parts = await inbox.read();
    } catch {
      break; // the engine closed the ring
    }
    const { header, blobs } = fromFrames(parts, WorkerInbound, 'engine → worker');
    await dispatch(handlers, header, blobs);
  }
  await Promise.all(deferred);
  await handler.close?.();
}
