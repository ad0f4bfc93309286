/**
 * The LLM engine in virtual time, step for step as executors/llm/engine.ts: each loop admits waiting requests
 * into one prefill (the live admission rule, plus the KV-cache budget of the device), which gives each its
 * first token, then runs one decode step for every running sequence; finished sequences leave.
 */
import { admitCount } from '../../policies/admission.js';
import type { Compute } from '../engine/compute.js';
import type { EventQueue } from '../engine/queue.js';
import { decodeMs, encoderMs, prefillMs, sums, type EncoderModel, type LlmModel } from '../latency/models.js';
import { SimExecutor, type SimJob } from './types.js';

interface Seq { job: SimJob; context: number; left: number; kv: number }

export class SimLlm extends SimExecutor {
  readonly #waiting: SimJob[] = [];
  readonly #running: Seq[] = [];
  #kvUsed = 0;
  /** The most KV-cache tokens ever held at once (≤ kvTokens unless one request alone is larger). */
  maxKvUsed = 0;

  /** inlineEncoder: the encoder model when this executor runs its requests' encoders itself (monolithic). */
  constructor(id: string, node: number, private readonly events: EventQueue, private readonly compute: Compute, private readonly model: LlmModel, private readonly inlineEncoder?: EncoderModel) {
    super(id, node, 1);
  }

  submit(job: SimJob): void {
    this.#waiting.push(job);
    if (this.running === 0) this.#loop();
  }

  #loop(): void {
    if (!this.#waiting.length && !this.#running.length) return;
    const m = this.model;
    const n = admitCount(this.#waiting, this.#running.length, { maxBatch: m.maxBatch, maxPrefillTokens: m.maxPrefillTokens, padMultiple: m.padMultiple, freeKvTokens: m.kvTokens - this.#kvUsed }, (j) => ({ n: j.promptTokens, needsSlot: true, kvTokens: j.promptTokens + j.outputTokens }));
    const admitted = this.#waiting.splice(0, n);
    this.started();
    if (admitted.length) {
      const { sum, squares } = sums(admitted, (j) => j.promptTokens);
      const { sum: units, squares: unitSquares } = sums(admitted, (j) => j.inlineUnits ?? 0);
      // Monolithic: the step first encodes the admitted requests' media on the same device (one encoder batch),
      // which holds up every running sequence's next decode step as well.
      const encodeMs = units > 0 && this.inlineEncoder ? encoderMs(this.inlineEncoder, units, `${this.id} (inline encoder)`, unitSquares) : 0;
      this.compute.run(encodeMs + prefillMs(m, sum, squares, `${this.id} (llm.prefill)`), () => {
        const t = this.events.now;
        for (const job of admitted) {
          const kv = job.promptTokens + job.outputTokens;
          this.#kvUsed += kv;
          job.onToken?.(t);
          if (job.outputTokens <= 1) {
            this.#kvUsed -= kv;
            job.done(t);
          } else this.#running.push({ job, context: job.promptTokens + 1, left: job.outputTokens - 1, kv });
        }
        if (this.#kvUsed > this.maxKvUsed) this.maxKvUsed = this.#kvUsed;
        this.#decode();
      });
    } else this.#decode();
  }

  #decode(): void {
    if (!this.#running.length) return this.#stepDone();
    let context = 0;
    for (const s of this.#running) context += s.context;
    this.compute.run(decodeMs(this.model, context, this.#running.length, `${this.id} (llm.decode)`), () => {
      const t = this.events.now;
      let w = 0;
      for (const s of this.#running) {
        s.job.onToken?.(t);
        s.context++;
        if (--s.left > 0) this.#running[w++] = s;
        else {
          this.#kvUsed -= s.kv;
          s.job.done(t);
        }
      }
      this.#running.length = w;
      this.#stepDone();
    });
  }

  #stepDone(): void {
    this.ended();
    this.#loop();
  }
}
