/**
 * The LLM engine in virtual time, step for step as executors/llm/engine.ts: each loop admits waiting requests
 * into one prefill (the live admission rule, with the device's paged KV cache as vLLM manages it), which gives
 * each its first token, then runs one decode step for every running sequence; finished sequences leave. A
 * decode step that needs more KV blocks than are free first preempts the latest-admitted sequences: they give
 * their blocks back and wait at the head of the queue, and their next prefill recomputes prompt + the tokens
 * they had generated (vLLM's recompute preemption).
 */
import { admitCount, blocksFor, preemptCount } from '../../policies/admission.js';
import type { Compute } from '../engine/compute.js';
import type { EventQueue } from '../engine/queue.js';
import { decodeMs, encoderMs, prefillMs, sums, type EncoderModel, type LlmModel } from '../latency/models.js';
import { SimExecutor, type SimJob } from './types.js';

/** A request waiting for a prefill: new (generated 0), or preempted after generating some tokens. */
interface Waiting { job: SimJob; generated: number }
/** context: tokens whose KV is stored; left: tokens still to generate. */
interface Seq { job: SimJob; context: number; left: number; blocks: number; generated: number }

/** vLLM's block manager keeps 1% of the blocks free when it admits, so running sequences can grow. */
const WATERMARK = 0.01;

export class SimLlm extends SimExecutor {
  readonly #waiting: Waiting[] = [];
  readonly #running: Seq[] = [];
  readonly totalBlocks: number;
  readonly blockSize: number;
  #freeBlocks: number;
  /** The most KV blocks ever held at once (≤ totalBlocks). */
  maxBlocksUsed = 0;
  /** Sequences preempted (blocks given back, recomputed later). */
  preemptions = 0;

  /** inlineEncoder: the encoder model when this executor runs its requests' encoders itself (monolithic). */
  constructor(id: string, node: number, private readonly events: EventQueue, private readonly compute: Compute, private readonly model: LlmModel, private readonly inlineEncoder?: EncoderModel) {
    super(id, node, 1);
    this.blockSize = model.kvBlockSize;
    this.totalBlocks = Math.floor(model.kvTokens / model.kvBlockSize);
    this.#freeBlocks = this.totalBlocks;
  }

  submit(job: SimJob): void {
    this.#waiting.push({ job, generated: 0 });
    if (this.running === 0) this.#loop();
  }

  #loop(): void {
    if (!this.#waiting.length && !this.#running.length) return;
    const m = this.model;
    const kv = { freeBlocks: this.#freeBlocks, blockSize: m.kvBlockSize, watermarkBlocks: Math.floor(this.totalBlocks * WATERMARK) };
    const n = admitCount(this.#waiting, this.#running.length, { maxBatch: m.maxBatch, maxPrefillTokens: m.maxPrefillTokens, padMultiple: m.padMultiple, kv }, (w) => ({ n: w.job.promptTokens + w.generated, needsSlot: true }));
    const admitted = this.#waiting.splice(0, n);
    this.started();
    if (admitted.length) {
      for (const w of admitted) this.#take(blocksFor(w.job.promptTokens + w.generated, m.kvBlockSize));
      const { sum, squares } = sums(admitted, (w) => w.job.promptTokens + w.generated);
      // A recomputed request's media were encoded before: only a first prefill encodes inline.
      const { sum: units, squares: unitSquares } = sums(admitted, (w) => (w.generated === 0 ? w.job.inlineUnits ?? 0 : 0));
      // Monolithic: the step first encodes the admitted requests' media on the same device (one encoder batch),
      // which holds up every running sequence's next decode step as well.
      const encodeMs = units > 0 && this.inlineEncoder ? encoderMs(this.inlineEncoder, units, `${this.id} (inline encoder)`, unitSquares) : 0;
      this.compute.run(encodeMs + prefillMs(m, sum, squares, `${this.id} (llm.prefill)`), () => {
        const t = this.events.now;
        for (const { job, generated } of admitted) {
          const context = job.promptTokens + generated;
          const blocks = blocksFor(context, m.kvBlockSize);
          job.onToken?.(t);
          const left = job.outputTokens - generated - 1;
          if (left <= 0) {
            this.#freeBlocks += blocks;
            job.done(t);
          } else this.#running.push({ job, context, left, blocks, generated: generated + 1 });
        }
        this.#decode();
      });
    } else this.#decode();
  }

  #take(blocks: number): void {
    this.#freeBlocks -= blocks;
    const used = this.totalBlocks - this.#freeBlocks;
    if (used > this.maxBlocksUsed) this.maxBlocksUsed = used;
  }

  /** Preempts the latest-admitted sequences until every other one has a block for its next token. */
  #makeRoom(): void {
    const size = this.model.kvBlockSize;
    const view = this.#running.map((s) => ({ holds: s.blocks, needs: s.context % size === 0 ? 1 : 0 }));
    const k = preemptCount(view, this.#freeBlocks);
    if (k === 0) return;
    const victims = this.#running.splice(this.#running.length - k, k);
    for (const s of victims) this.#freeBlocks += s.blocks;
    this.preemptions += k;
    this.#waiting.unshift(...victims.map((s) => ({ job: s.job, generated: s.generated })));
  }

  #decode(): void {
    this.#makeRoom();
    if (!this.#running.length) return this.#stepDone();
    let context = 0;
    for (const s of this.#running) {
      if (s.context % this.model.kvBlockSize === 0) {
        this.#take(1);
        s.blocks++;
      }
      context += s.context;
    }
    this.compute.run(decodeMs(this.model, context, this.#running.length, `${this.id} (llm.decode)`), () => {
      const t = this.events.now;
      let w = 0;
      for (const s of this.#running) {
        s.job.onToken?.(t);
        s.context++;
        s.generated++;
        if (--s.left > 0) this.#running[w++] = s;
        else {
          this.#freeBlocks += s.blocks;
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
