/** Geri in virtual time: the live Geri request queue forms each batch; steps × per-step model gives its duration. */
import { RequestQueue } from '../../policies/geri-scheduler.js';
import type { GenParams } from '../../lib/geri-protocol.js';
import type { Compute } from '../engine/compute.js';
import type { EventQueue } from '../engine/queue.js';
import { encoderMs, generatorMs, sums, type EncoderModel, type GeneratorModel } from '../latency/models.js';
import { SimExecutor, type SimJob } from './types.js';

export class SimGenerator extends SimExecutor {
  readonly queue = new RequestQueue();
  readonly #jobs = new Map<string, SimJob>();
  readonly #params: GenParams;

  /** inlineEncoder: the encoder model when this executor encodes its requests' inputs itself (monolithic). */
  constructor(id: string, node: number, private readonly events: EventQueue, private readonly compute: Compute, modality: string, private readonly model: GeneratorModel, private readonly inlineEncoder?: EncoderModel) {
    super(id, node, 1);
    this.#params = (modality === 'image' ? { kind: 'image', height: 64, width: 64, numInferenceSteps: model.steps } : { kind: 'audio', chunkSize: 4, leftContextSize: 2 }) as GenParams;
  }

  submit(job: SimJob): void {
    const requestId = String(job.id);
    this.#jobs.set(requestId, job);
    this.queue.enqueue({ requestId, embeddingDataId: requestId, deadline: Infinity, params: this.#params });
    this.#next();
  }

  #next(): void {
    if (this.running >= this.capacity) return;
    const head = this.queue.peekNext();
    if (!head) return;
    const batch = this.queue.popBatch(head, this.model.maxBatchSize);
    this.started();
    const { sum: units, squares } = sums(batch, (r) => this.#jobs.get(r.requestId)!.inlineUnits ?? 0);
    const encodeMs = units > 0 && this.inlineEncoder ? encoderMs(this.inlineEncoder, units, `${this.id} (inline encoder)`, squares) : 0;
    this.compute.run(encodeMs + generatorMs(this.model, batch.length, `${this.id} (generator)`), () => {
      this.ended();
      for (const r of batch) {
        const job = this.#jobs.get(r.requestId)!;
        this.#jobs.delete(r.requestId);
        job.done(this.events.now);
      }
      this.#next();
    });
  }
}
