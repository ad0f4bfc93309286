/** Eric in virtual time: the live Eric scheduler forms each batch; the encoder model gives its duration. */
import { Scheduler } from '../../policies/eric-scheduler.js';
import type { Compute } from '../engine/compute.js';
import type { EventQueue } from '../engine/queue.js';
import { encoderMs, sums, type EncoderModel } from '../latency/models.js';
import { SimExecutor, type SimJob } from './types.js';

export class SimEncoder extends SimExecutor {
  readonly scheduler: Scheduler;
  readonly #jobs = new Map<string, SimJob>();

  constructor(id: string, node: number, private readonly events: EventQueue, private readonly compute: Compute, private readonly modality: string, maxBatchSize: number | undefined, private readonly model: EncoderModel) {
    super(id, node, 1); // one batch at a time (Eric's engine runs its batches one after another)
    this.scheduler = new Scheduler(maxBatchSize);
  }

  submit(job: SimJob): void {
    const requestId = String(job.id);
    this.#jobs.set(requestId, job);
    this.scheduler.enqueue({ requestId, deadline: Infinity, items: [{ id: '0', meta: { modality: this.modality, modelId: 'm' }, tensors: {} }] });
    this.#next();
  }

  #next(): void {
    if (this.running >= this.capacity) return;
    const batch = this.scheduler.schedule();
    if (!batch) return;
    const { sum: units, squares } = sums(batch.entries, (e) => this.#jobs.get(e.requestId)!.units);
    this.started();
    this.compute.run(encoderMs(this.model, units, `${this.id} (encoder)`, squares), () => {
      this.ended();
      for (const e of batch.entries) {
        if (!this.scheduler.complete(e.requestId, { id: e.item.id, ok: true })) continue;
        const job = this.#jobs.get(e.requestId)!;
        this.#jobs.delete(e.requestId);
        job.done(this.events.now);
      }
      this.#next();
    });
  }
}
