/** The echo executor: requests past maxConcurrency wait FIFO (as executors/echo does); each takes its service time. */
import type { Compute } from '../engine/compute.js';
import type { EventQueue } from '../engine/queue.js';
import { checked, type EchoModel } from '../latency/models.js';
import { SimExecutor, type SimJob } from './types.js';

export class SimEcho extends SimExecutor {
  readonly #queue: SimJob[] = [];
  readonly #serviceMs: number;

  constructor(id: string, node: number, private readonly events: EventQueue, private readonly compute: Compute, config: { serviceTimeMs?: unknown; maxConcurrency?: unknown }, model: EchoModel) {
    super(id, node, typeof config.maxConcurrency === 'number' ? config.maxConcurrency : Infinity);
    this.#serviceMs = checked((typeof config.serviceTimeMs === 'number' ? config.serviceTimeMs : 0) + model.a, `${id} (echo)`, 'a request');
  }

  submit(job: SimJob): void {
    this.#queue.push(job);
    this.#next();
  }

  #next(): void {
    while (this.running < this.capacity && this.#queue.length) {
      const job = this.#queue.shift()!;
      this.started();
      this.compute.run(this.#serviceMs, () => {
        this.ended();
        job.done(this.events.now);
        this.#next();
      });
    }
  }
}
