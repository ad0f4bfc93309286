/**
 * Router side of the router ↔ engine link. `enqueue(items)` sends one request to the engine and resolves
 * with its per-item results. Every request is bounded: it fails with EXECUTOR_DEADLINE_EXCEEDED at its
 * deadline or EXECUTOR_CANCELLED when its signal aborts (and the engine is told to drop it), and with
 * EXECUTOR_ENGINE_DEAD as soon as the engine process is gone (`fail`, called by engine-process.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../../lib/log.js';
import { deadlineTimer } from '../../lib/wait.js';
import { ExecutorError, ExecutorErrorCode, executorError, fromWire } from '../../lib/executor-errors.js';
import {
  EngineOutbound, type EngineInbound, type Handlers, type Item, type ItemResult, derefTensors, dispatch, itemsToWire, resultsFromWire,
} from '../../lib/executor-protocol.js';
import type { StreamEvent } from './worker-pool.js';
import { ZmqLink, endpoints } from './zmq-link.js';

export interface EnqueueOptions {
  /** Epoch ms; the request fails with EXECUTOR_DEADLINE_EXCEEDED after it. */
  deadline: number;
  traceparent?: string;
  signal?: AbortSignal;
  /** Partial outputs (streaming executors), in order per item. */
  onStream?: (e: StreamEvent) => void;
}

/** The engine's answer: ok when every item succeeded; per-item results either way. */
export interface EngineResponse { ok: boolean; error?: ExecutorError; items: ItemResult[] }

interface Pending {
  resolve: (r: EngineResponse) => void;
  reject: (e: Error) => void;
  onStream?: (e: StreamEvent) => void;
  cleanup: () => void;
}

export class EngineClient {
  private readonly link: ZmqLink<EngineOutbound, EngineInbound>;
  private readonly pending = new Map<string, Pending>();
  private failure: ExecutorError | undefined;
  private onReady!: (info: Record<string, unknown>) => void;
  /** Resolves with the engine's info once it reported ready. */
  readonly ready: Promise<Record<string, unknown>> = new Promise((r) => { this.onReady = r; });

  /** Called on every heartbeat answer (EngineProcess watches them). */
  onPong: (() => void) | undefined;

  constructor(private readonly ipcDir: string, private readonly log: Logger) {
    this.link = new ZmqLink(EngineOutbound, 'engine → router', log);
  }

  async bind(): Promise<void> {
    const ep = endpoints(this.ipcDir);
    await this.link.bind(ep.toEngine, ep.toRouter);
    const handlers: Handlers<EngineOutbound> = {
      ready: (m) => this.onReady(m.info),
      response: (m, blobs) => {
        const p = this.take(m.requestId);
        p?.resolve({ ok: m.ok, items: resultsFromWire(m.items, blobs), ...(m.error ? { error: fromWire(m.error) } : {}) });
      },
      stream: (m, blobs) => {
        this.pending.get(m.requestId)?.onStream?.({ itemId: m.itemId, seq: m.seq, meta: m.meta, tensors: derefTensors(m.tensors, blobs) });
      },
      pong: () => this.onPong?.(),
    };
    void this.link.receive((p) => {
      try {
        dispatch(handlers, p.header, p.blobs);
      } catch (e) {
        this.log.error({ err: (e as Error).message }, 'bad message from the engine');
      }
    });
  }

  get alive(): boolean { return this.failure === undefined; }
  get inflight(): number { return this.pending.size; }

  private take(requestId: string): Pending | undefined {
    const p = this.pending.get(requestId);
    if (!p) return undefined;
    this.pending.delete(requestId);
    p.cleanup();
    return p;
  }

  private abandon(requestId: string, err: ExecutorError): void {
    const p = this.take(requestId);
    if (!p) return;
    p.reject(err);
    void this.link.send({ type: 'cancel', requestId, reason: err.message }).catch(() => undefined);
  }

  /** Sends one request's items to the engine; resolves with the engine's per-item results. */
  enqueue(items: readonly Item[], o: EnqueueOptions): Promise<EngineResponse> {
    if (this.failure) return Promise.reject(this.failure);
    if (o.signal?.aborted) return Promise.reject(executorError(ExecutorErrorCode.CANCELLED, 'the request was cancelled before it reached the engine'));
    const requestId = randomUUID();
    const blobs: Uint8Array[] = [];
    const header: EngineInbound = {
      type: 'enqueue', requestId, deadline: o.deadline, items: itemsToWire(items, blobs), ...(o.traceparent ? { traceparent: o.traceparent } : {}),
    };
    return new Promise<EngineResponse>((resolve, reject) => {
      const ms = Math.max(0, o.deadline - Date.now());
      const timer = deadlineTimer(o.deadline, () => this.abandon(requestId, executorError(ExecutorErrorCode.DEADLINE_EXCEEDED, `the engine did not answer within ${ms} ms`)));
      const onAbort = () => this.abandon(requestId, executorError(ExecutorErrorCode.CANCELLED, 'the request was cancelled'));
      o.signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(requestId, {
        resolve, reject, ...(o.onStream ? { onStream: o.onStream } : {}),
        cleanup: () => { timer.clear(); o.signal?.removeEventListener('abort', onAbort); },
      });
      this.link.send(header, blobs).catch((e: Error) => this.abandon(requestId, executorError(ExecutorErrorCode.ENGINE_DEAD, `cannot reach the engine: ${e.message}`)));
    });
  }

  /** One heartbeat; the engine answers with a `pong` (a send that fails is the exit watch's business). */
  ping(seq: number): void {
    void this.link.send({ type: 'ping', seq }).catch(() => undefined);
  }

  /** The engine is gone: every pending and later request fails with `err`. */
  fail(err: ExecutorError): void {
    this.failure ??= err;
    for (const id of [...this.pending.keys()]) this.take(id)?.reject(this.failure);
  }

  close(): void {
    this.fail(executorError(ExecutorErrorCode.ENGINE_DEAD, 'the engine client is closed'));
    this.link.close();
  }
}
