/**
 * Eric's scheduler, the reference policy: requests queue FCFS; a batch starts at the first waiting item of
 * the oldest request and takes the following waiting items (across requests, in order) while their modality
 * and adapter (model id) match the first one's, stopping at the first mismatch, up to maxBatchSize.
 * Item states: waiting → running (in a batch) → done. A request is finished when all its items are done.
 * Pure logic, no I/O.
 */
import type { Item, ItemResult } from '../lib/executor-protocol.js';

export interface EricItemMeta { modality: string; modelId: string }

export interface SchedRequest {
  requestId: string;
  /** Epoch ms. */
  deadline: number;
  items: Item[];
}

export interface BatchEntry { requestId: string; item: Item }

export interface Batch {
  modality: string;
  /** The adapter: every item of a batch has this model id. */
  modelId: string;
  entries: BatchEntry[];
}

type State = 'waiting' | 'running' | 'done';

interface Tracked {
  req: SchedRequest;
  states: State[];
  results: (ItemResult | undefined)[];
}

const metaOf = (it: Item) => it.meta as unknown as EricItemMeta;

export class Scheduler {
  private readonly queue = new Map<string, Tracked>();

  /** @param maxBatchSize items per batch; undefined = unlimited (the reference's None). */
  constructor(private readonly maxBatchSize?: number) {
    if (maxBatchSize !== undefined && (!Number.isInteger(maxBatchSize) || maxBatchSize < 1)) {
      throw new RangeError(`maxBatchSize must be a positive integer, got ${maxBatchSize}`);
    }
  }

  enqueue(req: SchedRequest): void {
    if (this.queue.has(req.requestId)) throw new Error(`request ${req.requestId} is already queued`);
    this.queue.set(req.requestId, { req, states: req.items.map(() => 'waiting'), results: req.items.map(() => undefined) });
  }

  /** True while some item waits to be scheduled. */
  hasWaiting(): boolean {
    for (const t of this.queue.values()) if (t.states.includes('waiting')) return true;
    return false;
  }

  /** Requests not yet finished (waiting or running items). */
  get size(): number { return this.queue.size; }

  /** The next batch (its items become running), or undefined when nothing waits. */
  schedule(): Batch | undefined {
    let head: EricItemMeta | undefined;
    const entries: BatchEntry[] = [];
    const picked: [Tracked, number][] = [];
    outer: for (const t of this.queue.values()) {
      for (let i = 0; i < t.req.items.length; i++) {
        if (t.states[i] !== 'waiting') continue;
        const item = t.req.items[i]!;
        const m = metaOf(item);
        head ??= m;
        if (m.modality !== head.modality || m.modelId !== head.modelId) break outer;
        entries.push({ requestId: t.req.requestId, item });
        picked.push([t, i]);
        if (this.maxBatchSize !== undefined && entries.length >= this.maxBatchSize) break outer;
      }
    }
    if (!head) return undefined;
    for (const [t, i] of picked) t.states[i] = 'running';
    return { modality: head.modality, modelId: head.modelId, entries };
  }

  /**
   * Records an item's result. Returns the request with its results (in item order) once all its items are
   * done; undefined otherwise (or when the request was dropped meanwhile).
   */
  complete(requestId: string, result: ItemResult): { req: SchedRequest; results: ItemResult[] } | undefined {
    const t = this.queue.get(requestId);
    if (!t) return undefined;
    const i = t.req.items.findIndex((it, k) => it.id === result.id && t.states[k] !== 'done');
    if (i < 0) return undefined;
    t.states[i] = 'done';
    t.results[i] = result;
    if (!t.states.every((s) => s === 'done')) return undefined;
    this.queue.delete(requestId);
    return { req: t.req, results: t.results as ItemResult[] };
  }

  /** Forgets a request (cancelled): its waiting items will not run; results of running ones are ignored. */
  drop(requestId: string): boolean {
    return this.queue.delete(requestId);
  }

  /** Removes and returns the requests whose deadline passed while some of their items still wait. */
  expire(now: number): SchedRequest[] {
    const out: SchedRequest[] = [];
    for (const [id, t] of this.queue) {
      if (t.req.deadline <= now && t.states.includes('waiting')) {
        this.queue.delete(id);
        out.push(t.req);
      }
    }
    return out;
  }
}
