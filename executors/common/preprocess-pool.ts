/**
 * A worker-thread pool for the router's CPU-heavy preprocessing (image decode/resize/patchify, WAV → mel),
 * so the router's event loop (HTTP, /health) never runs it. Inputs and outputs travel by postMessage with
 * their ArrayBuffers transferred (no copy). FIFO queue; one task per thread at a time; a task that passes its
 * deadline or whose signal aborts fails at once (a running one's late result is dropped). A thread that
 * crashes fails its task with EXECUTOR_PREPROCESS_CRASHED and is replaced; while a replacement cannot start, the
 * pool is short of threads and `healthy` is false (the router's /health reports it).
 *
 * Worker side:
 *   servePreprocess<Settings, In, Out>(async (settings) => async (input) => ({ value, transfer: [buffers] }));
 */
import { type TransferListItem, type Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { startThread } from './thread.js';
import type { Logger } from '../../lib/log.js';
import { deadlineTimer, type DeadlineTimer } from '../../lib/wait.js';
import { ExecutorErrorCode, executorError, fromWire, toWire, type WireError } from '../../lib/executor-errors.js';

type ToWorker = { id: number; input: unknown };
type FromWorker = { type: 'ready' } | { type: 'fatal'; error: WireError } | { type: 'result'; id: number; value: unknown } | { type: 'error'; id: number; error: WireError };

export interface PreprocessPoolOptions {
  script: URL;
  /** Threads. @default 2 */
  size?: number;
  /** Settings every thread receives (structured-cloneable). */
  workerData?: unknown;
  /** Queued tasks beyond this fail with EXECUTOR_OVERLOADED. @default 10000 */
  maxQueue?: number;
  log: Logger;
}

export interface RunOptions {
  transfer?: TransferListItem[];
  signal?: AbortSignal;
  /** Epoch ms. */
  deadline?: number;
}

interface Task {
  id: number;
  input: unknown;
  transfer: TransferListItem[];
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  settled: boolean;
  cleanup: () => void;
}

interface Thread { worker: Worker; busy: Task | undefined; ready: boolean }

export class PreprocessPool<In, Out> {
  private readonly threads = new Set<Thread>();
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closed = false;

  private constructor(private readonly opts: PreprocessPoolOptions) {}

  static async start<In, Out>(opts: PreprocessPoolOptions): Promise<PreprocessPool<In, Out>> {
    const pool = new PreprocessPool<In, Out>(opts);
    try {
      await Promise.all(Array.from({ length: opts.size ?? 2 }, () => pool.spawn()));
    } catch (e) {
      await pool.close();
      throw e;
    }
    return pool;
  }

  get queued(): number { return this.queue.length; }

  /** Every thread the pool started with is running or starting (false once a replacement failed to start). */
  get healthy(): boolean { return !this.closed && this.threads.size >= (this.opts.size ?? 2); }

  private spawn(): Promise<void> {
    const worker = startThread(this.opts.script, { workerData: this.opts.workerData });
    const thread: Thread = { worker, busy: undefined, ready: false };
    this.threads.add(thread);
    return new Promise<void>((resolve, reject) => {
      worker.on('message', (m: FromWorker) => {
        if (m.type === 'ready') { thread.ready = true; resolve(); this.pump(); return; }
        if (m.type === 'fatal') {
          this.threads.delete(thread); // it cannot serve: the pool is short of it until a later replacement starts
          void worker.terminate();
          reject(fromWire(m.error));
          return;
        }
        const task = thread.busy;
        thread.busy = undefined;
        if (task && task.id === m.id) this.settle(task, m.type === 'result' ? { value: m.value } : { error: fromWire(m.error) });
        this.pump();
      });
      worker.on('error', (err) => this.opts.log.error({ err: err.message }, 'preprocessing thread crashed'));
      worker.on('exit', (code) => {
        this.threads.delete(thread);
        const task = thread.busy;
        if (task) this.settle(task, { error: executorError(ExecutorErrorCode.PREPROCESS_CRASHED, `the preprocessing thread exited with code ${code} while handling this item`) });
        if (!thread.ready) { reject(executorError(ExecutorErrorCode.PREPROCESS_CRASHED, `a preprocessing thread exited with code ${code} while starting`)); return; }
        if (!this.closed) {
          void this.spawn().catch((e: Error) => { if (!this.closed) this.opts.log.error({ err: e.message }, 'cannot replace a preprocessing thread'); });
        }
      });
    });
  }

  private settle(task: Task, r: { value: unknown } | { error: Error }): void {
    if (task.settled) return;
    task.settled = true;
    task.cleanup();
    if ('error' in r) task.reject(r.error);
    else task.resolve(r.value);
  }

  private pump(): void {
    for (const t of this.threads) {
      if (!t.ready || t.busy) continue;
      let task = this.queue.shift();
      while (task?.settled) task = this.queue.shift();
      if (!task) return;
      t.busy = task;
      t.worker.postMessage({ id: task.id, input: task.input } satisfies ToWorker, task.transfer);
    }
  }

  /** Runs one task on the next free thread. */
  run(input: In, o: RunOptions = {}): Promise<Out> {
    if (this.closed) return Promise.reject(executorError(ExecutorErrorCode.CANCELLED, 'the preprocessing pool is closed'));
    if (this.queue.length >= (this.opts.maxQueue ?? 10_000)) {
      return Promise.reject(executorError(ExecutorErrorCode.OVERLOADED, `${this.queue.length} items are waiting for preprocessing`));
    }
    return new Promise<Out>((resolve, reject) => {
      let timer: DeadlineTimer | undefined;
      const task: Task = {
        id: this.nextId++, input, transfer: o.transfer ?? [], resolve: resolve as (v: unknown) => void, reject, settled: false,
        cleanup: () => { timer?.clear(); o.signal?.removeEventListener('abort', onAbort); },
      };
      const onAbort = () => this.settle(task, { error: executorError(ExecutorErrorCode.CANCELLED, 'preprocessing was cancelled') });
      if (o.signal?.aborted) return onAbort();
      o.signal?.addEventListener('abort', onAbort, { once: true });
      if (o.deadline !== undefined) {
        const ms = Math.max(0, o.deadline - Date.now());
        timer = deadlineTimer(o.deadline, () => this.settle(task, { error: executorError(ExecutorErrorCode.DEADLINE_EXCEEDED, `preprocessing did not finish within ${ms} ms`) }));
      }
      this.queue.push(task);
      this.pump();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const err = executorError(ExecutorErrorCode.CANCELLED, 'the preprocessing pool is closed');
    for (const t of this.queue.splice(0)) this.settle(t, { error: err });
    await Promise.all([...this.threads].map((t) => t.worker.terminate()));
  }
}

/** Worker side: `init` builds the per-thread function once (load settings, warm up); errors travel with their codes. */
export function servePreprocess<D, In, Out>(
  init: (settings: D) => Promise<(input: In) => Promise<{ value: Out; transfer?: TransferListItem[] }>>,
): void {
  if (isMainThread || !parentPort) throw new Error('servePreprocess runs inside a worker thread of a PreprocessPool');
  const port = parentPort;
  void init(workerData as D).then(
    (fn) => {
      port.on('message', (m: ToWorker) => {
        fn(m.input as In).then(
          (r) => port.postMessage({ type: 'result', id: m.id, value: r.value } satisfies FromWorker, r.transfer ?? []),
          (e: unknown) => port.postMessage({ type: 'error', id: m.id, error: toWire(e) } satisfies FromWorker),
        );
      });
      port.postMessage({ type: 'ready' } satisfies FromWorker);
    },
    (e: unknown) => {
      port.postMessage({ type: 'fatal', error: toWire(e) } satisfies FromWorker);
      port.close();
    },
  );
}
