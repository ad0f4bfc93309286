/**
 * The echo executor: requests past maxConcurrency wait FIFO (as executors/echo does); each takes its service time.
 * The configured service time is a timer (executors/echo sleeps, using no core), so it is a delay even on shared
 * cores; the model's `a` is the executor's own work per request and runs on the node's compute.
 */
import type { Compute } from '../engine/compute.js';
import type { EventQueue } from '../engine/queue.js';
import { checked, type EchoModel } from '../latency/models.js';
import { SimExecutor, type SimJob } from './types.js';

export class SimEcho extends SimExecutor {
  readonly #queue: SimJob[] = [];
  readonly #sleepMs: number;
  readonly #workMs: number;

  constructor(id: string, node: number, private readonly events: EventQueue, private readonly compute: Compute, config: { serviceTimeMs?: unknown; maxConcurrency?: unknown }, model: EchoModel) {
    super(id, node, typeof config.maxConcurrency === 'number' ? config.maxConcurrency : Infinity);
    this.#sleepMs = checked(typeof config.serviceTimeMs === 'number' ? config.serviceTimeMs : 0, `${id} (echo)`, 'a request');
    this.#workMs = checked(model.a, `${id} (echo)`, 'a request');
  }

  submit(job: SimJob): void {
    this.#queue.push(job);
    this.#next();
  }

  #next(): void {
    while (this.running < this.capacity && this.#queue.length) {
      const job = this.#queue.shift()!;
      this.started();
      this.compute.run(this.#workMs, () => this.events.after(this.#sleepMs, () => {
        this.ended();
        job.done(this.events.now);
        this.#next();
      }));
    }
  }
}
