/**
 * The LLM engine: continuous batching over one model in this process. Requests wait in a FIFO queue; between
 * decoder steps the loop (1) drops requests that were cancelled or passed their deadline (their cache slots are
 * freed at once), (2) admits waiting requests into one batched prefill (up to `maxBatch` running sequences
 * and `maxPrefillTokens` padded prompt tokens) which yields each one's first token, and (3) runs one decode
 * step for every running sequence. A finished sequence leaves the batch before the next step.
 *
 * Why in-process (not the router → engine → worker split of executors/common): a decode step produces one
 * token per sequence every few milliseconds; each token goes straight from the sampler to its HTTP response
 * with no hop. onnxruntime-node runs a session synchronously on the JS thread, so the loop yields to I/O
 * between steps: new requests, disconnects and SSE writes are handled at step boundaries.
 *
 * A sequence's tokens do not depend on its batch mates (steps.ts; sampling uses the request's own seed).
 */
import { setImmediate as yieldToIo } from 'node:timers/promises';
import type { Logger } from '../../lib/log.js';
import { llmErrors } from './errors.js';

import type { LlmModel } from './model.js';
import type { Prompt } from './prompt.js';
import { Sequence, type FinishReason, type GenerateOptions } from './sequence.js';
import { admitCount } from '../../policies/admission.js';
import { type StepCache, compact, decode, newCache, prefill } from './steps.js';

export interface EngineOptions {
  /** Sequences decoded together at most (= KV cache slots). @default 32 */
  maxBatch?: number;
  /** Requests waiting at most; more are refused with LLM_OVERLOADED. @default 1024 */
  maxWaiting?: number;
  /** Padded prompt tokens per prefill call at most (one request is always admitted). @default 4096 */
  maxPrefillTokens?: number;
  /** Called after every decoder call (metrics). */
  onStep?: (kind: 'prefill' | 'decode', batch: number, ms: number) => void;
  /** Decoder steps failing in a row (none succeeding between) after which the engine counts as broken (`alive` false). @default 3 */
  brokenAfterFailures?: number;
  log?: Logger;
}

export interface EngineRequest {
  prompt: Prompt;
  gen: GenerateOptions;
  /** Prefill only; the result carries the prompt's final hidden states [n, hidden]. */
  hiddenStates?: boolean;
  /** Generate, and give `onToken` each token's hidden state: the final hidden state [hidden] it was sampled from. */
  tokenHiddenStates?: boolean;
  /** Epoch ms. */
  deadline: number;
  signal?: AbortSignal;
  /** Each new token and the text it made final ('' while held back); `hidden` with `tokenHiddenStates`. */
  onToken?: (token: number, text: string, hidden?: Float32Array) => void;
}

export interface EngineResult {
  tokens: number[];
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
  hidden?: Float32Array;
  /** Submit → first token (or → hidden states), ms. */
  ttftMs: number;
}

interface Job {
  req: EngineRequest;
  seq: Sequence;
  submitted: number;
  ttftMs: number;
  resolve: (r: EngineResult) => void;
  reject: (e: Error) => void;
}

export interface EngineStats {
  running: number;
  waiting: number;
  maxBatch: number;
  steps: number;
  kvSlots: number;
  kvCapacity: number;
  kvBytes: number;
}

export class Engine {
  private readonly waiting: Job[] = [];
  /** running[i] occupies cache slot i. */
  private readonly running: Job[] = [];
  private readonly cache: StepCache;
  private readonly maxBatch: number;
  private readonly maxWaiting: number;
  private readonly maxPrefillTokens: number;
  private wake: (() => void) | undefined;
  private closed = false;
  private steps = 0;
  /** Decoder steps that failed since the last one that succeeded. */
  private failuresInARow = 0;
  /** Set when the loop itself ended on an error: nothing is served any more. */
  private crashed: Error | undefined;
  private readonly done: Promise<void>;

  constructor(readonly model: LlmModel, private readonly opts: EngineOptions = {}) {
    this.cache = newCache(model);
    this.maxBatch = opts.maxBatch ?? 32;
    this.maxWaiting = opts.maxWaiting ?? 1024;
    this.maxPrefillTokens = opts.maxPrefillTokens ?? 4096;
    this.done = this.loop().catch((e: unknown) => {
      this.crashed = e instanceof Error ? e : new Error(String(e));
      this.opts.log?.error({ err: this.crashed }, 'the engine loop crashed; nothing is served until this executor is restarted');
      for (const j of [...this.waiting.splice(0), ...this.running.splice(0)]) j.reject(this.crashed);
    });
  }

  /**
   * False once the engine cannot serve: stopped, its loop crashed, or `brokenAfterFailures` decoder steps failed
   * in a row (a broken model session fails every step). The executor's /health reports it.
   */
  get alive(): boolean {
    return !this.closed && !this.crashed && this.failuresInARow < (this.opts.brokenAfterFailures ?? 3);
  }

  stats(): EngineStats {
    return {
      running: this.running.length, waiting: this.waiting.length, maxBatch: this.maxBatch, steps: this.steps,
      kvSlots: this.cache.slots, kvCapacity: this.cache.capacity, kvBytes: this.cache.bytes,
    };
  }

  /** Queues a request. Throws at once (not a rejected promise) when the engine is stopping or the queue is full. */
  submit(req: EngineRequest): Promise<EngineResult> {
    if (this.closed) throw llmErrors.cancelled('the engine is stopping');
    if (this.crashed) throw llmErrors.runFailed(`the engine loop crashed: ${this.crashed.message}`);
    if (this.waiting.length >= this.maxWaiting) throw llmErrors.overloaded(`${this.waiting.length} requests are waiting; retry later`);
    return new Promise<EngineResult>((resolve, reject) => {
      const seq = new Sequence(req.prompt.n, req.gen, this.model.tokenizer, this.model.config.maxPositions);
      this.waiting.push({ req, seq, submitted: performance.now(), ttftMs: 0, resolve, reject });
      this.wake?.();
    });
  }

  /** Stops the loop; waiting and running requests fail with LLM_CANCELLED. */
  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
    await this.done;
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      if (!this.waiting.length && !this.running.length) {
        this.cache.clear();
        await new Promise<void>((r) => (this.wake = r));
        this.wake = undefined;
        continue;
      }
      this.reap();
      const admitted = this.admit();
      try {
        if (admitted.length) await this.prefillStep(admitted);
        if (this.running.length) await this.decodeStep();
        this.failuresInARow = 0;
      } catch (e) {
        this.failuresInARow++;
        this.opts.log?.error({ err: e, failuresInARow: this.failuresInARow }, 'decoder step failed');
        const err = e instanceof Error ? e : new Error(String(e));
        for (const j of [...admitted, ...this.running.splice(0)]) j.reject(err);
      }
      await yieldToIo(); // let I/O (new requests, disconnects, SSE writes) in between steps
    }
    const err = llmErrors.cancelled('the engine stopped');
    for (const j of [...this.waiting.splice(0), ...this.running.splice(0)]) j.reject(err);
    this.cache.clear();
  }

  /** The error that ends a job now (client gone, deadline passed), if any. */
  private fault(j: Job): Error | undefined {
    if (j.req.signal?.aborted) return llmErrors.cancelled('the client went away');
    if (Date.now() > j.req.deadline) return llmErrors.deadline(`the request did not finish within its deadline (${j.seq.tokens.length} tokens generated)`);
    return undefined;
  }

  private reap(): void {
    for (let i = this.waiting.length - 1; i >= 0; i--) {
      const err = this.fault(this.waiting[i]!);
      if (err) this.waiting.splice(i, 1)[0]!.reject(err);
    }
    for (const j of compact(this.cache, this.running, (j) => this.fault(j) !== undefined)) j.reject(this.fault(j)!);
  }

  private admit(): Job[] {
    const limits = { maxBatch: this.maxBatch, maxPrefillTokens: this.maxPrefillTokens, padMultiple: this.model.config.padMultiple };
    return this.waiting.splice(0, admitCount(this.waiting, this.running.length, limits, (j) => ({ n: j.req.prompt.n, needsSlot: !j.req.hiddenStates })));
  }

  private async prefillStep(jobs: Job[]): Promise<void> {
    const gen = jobs.filter((j) => !j.req.hiddenStates);
    const live = this.running.map((j, slot) => ({ slot, len: j.seq.len }));
    // Room for the new prompts and for the running sequences' next position (never shrink below them).
    this.cache.reserve(this.running.length + gen.length, Math.max(0, ...gen.map((j) => j.req.prompt.n), ...live.map((l) => l.len)) + 1, live);
    const slotOf = new Map(gen.map((j, k) => [j, this.running.length + k]));
    const t0 = performance.now();
    const out = await prefill(
      this.model, this.cache,
      jobs.map((j) => ({ embeds: j.req.prompt.embeds, ids: j.req.prompt.ids, n: j.req.prompt.n, ...(slotOf.has(j) ? { slot: slotOf.get(j)! } : {}) })),
      jobs.some((j) => j.req.hiddenStates || j.req.tokenHiddenStates),
    );
    this.opts.onStep?.('prefill', jobs.length, performance.now() - t0);
    jobs.forEach((j, b) => {
      j.ttftMs = performance.now() - j.submitted;
      if (j.req.hiddenStates) this.finish(j, out.hidden![b]);
    });
    for (const j of gen) {
      j.seq.len = j.req.prompt.n;
      this.running.push(j);
    }
    const finished = new Set<Job>();
    const h = this.model.config.hidden;
    gen.forEach((j) => {
      const b = jobs.indexOf(j);
      const hidden = j.req.tokenHiddenStates ? out.hidden![b]!.subarray((j.req.prompt.n - 1) * h, j.req.prompt.n * h) : undefined;
      if (this.take(j, out.lastLogits[b]!, hidden)) finished.add(j);
    });
    for (const j of compact(this.cache, this.running, (j) => finished.has(j))) this.finish(j);
  }

  private async decodeStep(): Promise<void> {
    const live = this.running.map((j, slot) => ({ slot, len: j.seq.len }));
    this.cache.reserve(this.running.length, Math.max(...live.map((l) => l.len)) + 1, live);
    const t0 = performance.now();
    const wantHidden = this.running.some((j) => j.req.tokenHiddenStates);
    const { logits, hidden } = await decode(this.model, this.cache, this.running.map((j) => j.seq.lastToken), live.map((l) => l.len), wantHidden);
    this.steps++;
    this.opts.onStep?.('decode', this.running.length, performance.now() - t0);
    const finished = new Set<Job>();
    this.running.forEach((j, slot) => {
      j.seq.len++;
      if (this.take(j, logits[slot]!, j.req.tokenHiddenStates ? hidden![slot] : undefined)) finished.add(j);
    });
    for (const j of compact(this.cache, this.running, (j) => finished.has(j))) this.finish(j);
  }

  /** Samples and emits one token; true when the sequence is finished. */
  private take(j: Job, logits: Float32Array, hidden?: Float32Array): boolean {
    const token = j.seq.sampler.sample(logits);
    const a = j.seq.accept(token);
    if (!j.req.signal?.aborted) j.req.onToken?.(token, a.text, hidden);
    return a.finished;
  }

  private finish(j: Job, hidden?: Float32Array): void {
    const err = this.fault(j);
    if (err && !j.seq.finishReason && !hidden) return j.reject(err);
    j.resolve({
      tokens: j.seq.tokens, text: j.seq.text, finishReason: j.seq.finishReason ?? 'stop', promptTokens: j.req.prompt.n, ttftMs: j.ttftMs,
      ...(hidden ? { hidden } : {}),
    });
  }
}
