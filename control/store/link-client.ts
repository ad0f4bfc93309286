/**
 * StoreLink: an app function's view of the `cornserve up` process's Store for graph dispatch (link-protocol.ts).
 * Every call is one line out and one line back on a unix socket; calls are pipelined (ids match replies).
 * Change notifications are asked for once, at the first subscribe. A lost connection fails the calls in flight
 * with StoreUnavailableError (the dispatcher answers 503) and the next call connects again (and subscribes again).
 *
 * Lease changes can also be *reported* (reportOutstanding): nothing waits for them, they are summed per executor
 * for REPORT_WINDOW_MS and go out as one adjustOutstanding line per executor whose sum is not zero (a lease taken
 * and released within the window sends nothing). So a request over a task's one cached route makes no round trip
 * to the `up` process, and the Store's count of an executor is this process's true count as of the last flush:
 * behind by at most the window, never drifting (docs/benchmarks/history.md, step 5).
 */
import { connect, type Socket } from 'node:net';
import { StoreNotFoundError, StoreUnavailableError } from '../../lib/store-errors.js';
import type { StoreChange, Unsubscribe } from '../../lib/store.js';
import { logger } from '../../lib/log.js';
import { errorFromBody, lineSplitter, SUBSCRIBE, type DispatchStore, type LinkErrorBody, type LinkMethod, type ReportsOutstanding } from './link-protocol.js';

const log = logger('store-link');

/**
 * How long reported lease changes are gathered before they are sent. Readers of the counts (the autoscaler, every
 * seconds; routers picking among several executors) see them this much later at most; a shorter window costs one
 * more line to the `up` process (and its reply) per request at low load.
 */
export const REPORT_WINDOW_MS = 10;

interface Reported {
  delta: number;
  /** Told the executor's count once the flush that carried this delta is answered (plus what was reported since). */
  onCount: ((outstanding: number) => void) | undefined;
}

interface Pending {
  method: string;
  resolve(v: unknown): void;
  reject(e: Error): void;
}

type Reply = { i: number; r?: unknown; e?: LinkErrorBody } | { i?: undefined; c: StoreChange };

export class StoreLink implements DispatchStore, ReportsOutstanding {
  #socket: Socket | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, Pending>();
  readonly #listeners = new Set<(c: StoreChange) => void>();
  #closed = false;
  /** The server's answer to the connection's subscribe line (notifications are live once it came). */
  #subscribed: Promise<unknown> | undefined;

  /** executorId -> the lease changes reported and not yet sent */
  readonly #reported = new Map<string, Reported>();
  #reportTimer: NodeJS.Timeout | undefined;
  readonly #reportWindowMs: number;

  constructor(
    readonly socketPath: string,
    options: { reportWindowMs?: number } = {},
  ) {
    this.#reportWindowMs = options.reportWindowMs ?? REPORT_WINDOW_MS;
  }

  /** Connects (the first call would otherwise); rejects when nothing listens at the socket. */
  ready(): Promise<void> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store link is closed'));
    const socket = this.#connect();
    if (!socket.connecting) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const onError = (e: Error) => reject(new StoreUnavailableError(`cannot reach the store link at ${this.socketPath}: ${e.message}`));
      socket.once('error', onError);
      socket.once('connect', () => {
        socket.off('error', onError);
        resolve();
      });
    });
  }

  #connect(): Socket {
    if (this.#socket) return this.#socket;
    const socket = (this.#socket = connect(this.socketPath));
    socket.setEncoding('utf8');
    socket.on('data', lineSplitter((line) => this.#onLine(line)));
    const lost = (e?: Error) => {
      if (this.#socket !== socket) return;
      this.#socket = undefined;
      const error = new StoreUnavailableError(`the store link at ${this.socketPath} ${e ? `failed: ${e.message}` : 'closed'}`);
      for (const p of this.#pending.values()) p.reject(error);
      this.#pending.clear();
    };
    socket.on('error', lost);
    socket.on('close', () => lost());
    if (this.#listeners.size) this.#subscribe(socket);
    return socket;
  }

  #onLine(line: string): void {
    const reply = JSON.parse(line) as Reply;
    if (reply.i === undefined) {
      for (const l of [...this.#listeners]) l(reply.c);
      return;
    }
    const p = this.#pending.get(reply.i);
    if (!p) return;
    this.#pending.delete(reply.i);
    if (reply.e) p.reject(errorFromBody(reply.e, p.method));
    else p.resolve(reply.r);
  }

  #send(socket: Socket, method: string, args: unknown[]): Promise<unknown> {
    const i = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(i, { method, resolve, reject });
      socket.write(`${JSON.stringify({ i, m: method, a: args })}\n`);
    });
  }

  #call(method: LinkMethod | typeof SUBSCRIBE, args: unknown[]): Promise<unknown> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store link is closed'));
    return this.#send(this.#connect(), method, args);
  }

  getTask: DispatchStore['getTask'] = (...a) => this.#call('getTask', a) as ReturnType<DispatchStore['getTask']>;
  listExecutors: DispatchStore['listExecutors'] = (...a) => this.#call('listExecutors', a) as ReturnType<DispatchStore['listExecutors']>;
  adjustOutstanding: DispatchStore['adjustOutstanding'] = (...a) => this.#call('adjustOutstanding', a) as ReturnType<DispatchStore['adjustOutstanding']>;
  getAutoscale: DispatchStore['getAutoscale'] = (...a) => this.#call('getAutoscale', a) as ReturnType<DispatchStore['getAutoscale']>;
  addCounters: DispatchStore['addCounters'] = (...a) => this.#call('addCounters', a) as ReturnType<DispatchStore['addCounters']>;
  wakeTask: DispatchStore['wakeTask'] = (...a) => this.#call('wakeTask', a) as ReturnType<DispatchStore['wakeTask']>;
  putExecutorStats: DispatchStore['putExecutorStats'] = (...a) => this.#call('putExecutorStats', a) as ReturnType<DispatchStore['putExecutorStats']>;

  /** Adds `delta` to the executor's outstanding count without waiting: sent with the next flush (see the header). */
  reportOutstanding(executorId: string, delta: number, onCount?: (outstanding: number) => void): void {
    if (this.#closed) return;
    const entry = this.#reported.get(executorId);
    if (entry) {
      entry.delta += delta;
      entry.onCount = onCount ?? entry.onCount;
    } else this.#reported.set(executorId, { delta, onCount });
    if (!this.#reportTimer) {
      this.#reportTimer = setTimeout(() => this.#flushReported(), this.#reportWindowMs);
      this.#reportTimer.unref();
    }
  }

  /** Sends the reported sums (one adjustOutstanding line per executor; written at once, replies not awaited). */
  #flushReported(): void {
    clearTimeout(this.#reportTimer);
    this.#reportTimer = undefined;
    const batch = [...this.#reported];
    this.#reported.clear();
    for (const [executorId, { delta, onCount }] of batch) {
      if (delta === 0) continue;
      this.#send(this.#connect(), 'adjustOutstanding', [executorId, delta]).then(
        (n) => onCount?.((n as number) + (this.#reported.get(executorId)?.delta ?? 0)),
        // A deleted executor has nothing to count; a lost link lost the `up` process's Store with it.
        (err: unknown) => {
          if (!(err instanceof StoreNotFoundError)) log.warn({ err, executor: executorId }, 'could not report executor leases');
        },
      );
    }
  }

  subscribe(listener: (change: StoreChange) => void): Unsubscribe {
    const own = (c: StoreChange) => listener(c); // a distinct entry even if the same function subscribes twice
    const first = this.#listeners.size === 0;
    this.#listeners.add(own);
    // Connecting subscribes when there are listeners; a lost link subscribes again when it reconnects.
    if (first && !this.#closed) {
      if (this.#socket) this.#subscribe(this.#socket);
      else this.#connect();
    }
    return () => void this.#listeners.delete(own);
  }

  #subscribe(socket: Socket): void {
    this.#subscribed = this.#send(socket, SUBSCRIBE, []);
    this.#subscribed.catch(() => undefined);
  }

  /** Resolves once the server has turned notifications on for this connection; rejects if the link is down. */
  async subscriptionReady(): Promise<void> {
    if (!this.#subscribed) throw new StoreUnavailableError('the store link has no subscription (subscribe first)');
    await this.#subscribed;
  }

  /** Sends what was reported (written before the socket ends), then closes. */
  async close(): Promise<void> {
    if (!this.#closed && this.#reported.size) this.#flushReported();
    this.#closed = true;
    clearTimeout(this.#reportTimer);
    const socket = this.#socket;
    if (!socket) return;
    await new Promise<void>((resolve) => {
      socket.once('close', () => resolve());
      socket.end();
    });
  }
}
