/**
 * Geri's scheduler, the reference policy (task_executors/geri/engine/scheduler.py): requests wait in one
 * FCFS queue; a batch is the head request plus the requests right behind it that are `compatible` with it
 * (identical generation parameters), up to maxBatchSize, stopping at the first one that is not — no
 * reordering, so a request is never overtaken. Pure logic, no I/O.
 *
 * A request reaches the scheduler only once all its embeddings arrived (the router receives them first), so
 * a batch never waits on the sidecar.
 */
import type { Item } from '../lib/executor-protocol.js';
import { type GenParams, compatible } from '../lib/geri-protocol.js';

export interface ScheduledRequest {
  requestId: string;
  embeddingDataId: string;
  /** Epoch ms. */
  deadline: number;
  params: GenParams;
  /** The work itself (embeddings); absent in pure scheduling tests. */
  item?: Item;
}

/** A batch of requests with identical generation parameters (validated on construction). */
export class SchedulerBatch {
  readonly params: GenParams;

  constructor(readonly requests: readonly ScheduledRequest[]) {
    const head = requests[0];
    if (!head) throw new RangeError('a batch cannot be empty');
    for (const r of requests.slice(1)) {
      if (r.params.kind !== head.params.kind) throw new TypeError(`a batch holds one kind of request: ${head.params.kind}, got ${r.params.kind}`);
      if (!compatible(head.params, r.params)) throw new RangeError('all requests in a batch must have identical generation parameters');
    }
    this.params = head.params;
  }

  get length(): number { return this.requests.length; }
  get requestIds(): string[] { return this.requests.map((r) => r.requestId); }
  get embeddingDataIds(): string[] { return this.requests.map((r) => r.embeddingDataId); }
}

/** FCFS queue that pops runs of consecutive compatible requests. */
export class RequestQueue {
  private requests: ScheduledRequest[] = [];

  enqueue(r: ScheduledRequest): void {
    this.requests.push(r);
  }

  get length(): number { return this.requests.length; }

  hasRequests(): boolean {
    return this.requests.length > 0;
  }

  /** The head request (the next batch is built around it), without removing anything. */
  peekNext(): ScheduledRequest | undefined {
    return this.requests[0];
  }

  /**
   * Removes and returns the consecutive requests from the head that are compatible with `next`, at most
   * `maxBatchSize` (undefined = no limit); stops at the first that is not. Empty when the head does not match.
   */
  popBatch(next: ScheduledRequest, maxBatchSize?: number): ScheduledRequest[] {
    let n = 0;
    while (n < this.requests.length && (maxBatchSize === undefined || n < maxBatchSize) && compatible(next.params, this.requests[n]!.params)) n++;
    return this.requests.splice(0, n);
  }

  /** Removes one request (cancelled); true when it was queued. */
  remove(requestId: string): boolean {
    const i = this.requests.findIndex((r) => r.requestId === requestId);
    if (i < 0) return false;
    this.requests.splice(i, 1);
    return true;
  }

  /** Removes and returns the requests whose deadline is at or before `now`. */
  expire(now: number): ScheduledRequest[] {
    const expired = this.requests.filter((r) => r.deadline <= now);
    if (expired.length) this.requests = this.requests.filter((r) => r.deadline > now);
    return expired;
  }
}

export class Scheduler {
  readonly queue = new RequestQueue();

  /** @param maxBatchSize requests per batch; undefined = unlimited (the reference's None). */
  constructor(readonly maxBatchSize?: number) {
    if (maxBatchSize !== undefined && (!Number.isInteger(maxBatchSize) || maxBatchSize < 1)) {
      throw new RangeError(`maxBatchSize must be a positive integer, got ${maxBatchSize}`);
    }
  }

  enqueue(r: ScheduledRequest): void {
    this.queue.enqueue(r);
  }

  hasWaiting(): boolean {
    return this.queue.hasRequests();
  }

  /** The next batch, or undefined when nothing waits. */
  schedule(): SchedulerBatch | undefined {
    const head = this.queue.peekNext();
    if (!head) return undefined;
    return new SchedulerBatch(this.queue.popBatch(head, this.maxBatchSize));
  }

  drop(requestId: string): boolean {
    return this.queue.remove(requestId);
  }

  expire(now: number): ScheduledRequest[] {
    return this.queue.expire(now);
  }
}
