/**
 * Continuous batching on llama.cpp: one context holds `sequences` sequences; each running request owns one and
 * generates with `LlamaContextSequence.evaluate`, and node-llama-cpp batches the pending evaluations of all
 * sequences into one llama.cpp decode call per step (a request that arrives mid-generation joins the next step).
 * Requests beyond the free sequences wait in a FIFO queue; a finished, cancelled or expired request frees its
 * sequence for the next one at once. Sampling is llama.cpp's (temperature 0 = greedy; else temperature, top-p
 * and the request's seed). Text goes through the same stop-string and UTF-8 rules as the ONNX engine (TextOutput).
 */
import type { LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import type { Logger } from '../../../lib/log.js';
import type { EngineStats } from '../engine.js';
import { LlmError, llmErrors } from '../errors.js';
import type { FinishReason } from '../sequence.js';
import { TextOutput } from '../text-output.js';
import type { TokenTextStream } from '../tokenizer.js';
import type { LoadedGguf } from './model.js';

export interface GgufRequest {
  ids: number[];
  maxTokens: number;
  temperature: number;
  topP: number;
  seed?: number;
  stop: readonly string[];
  /** Keep generating past end-of-generation tokens (benchmarks). */
  ignoreEos: boolean;
  /** Epoch ms. */
  deadline: number;
  signal?: AbortSignal;
  /** Text that became final with each token ('' while held back), and the held-back rest at the end. */
  onText?: (text: string) => void;
}

export interface GgufResult {
  tokens: number[];
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
  /** Submit → first token, ms. */
  ttftMs: number;
}

interface Job {
  req: GgufRequest;
  submitted: number;
  resolve: (r: GgufResult) => void;
  reject: (e: Error) => void;
}

/**
 * Token ids → text through llama.cpp's detokenizer, incrementally: pieces whose bytes end inside a UTF-8
 * character (U+FFFD at the end) are held back until the character completes, as node-llama-cpp's own streaming
 * does; the previous tokens are passed as context (SentencePiece's leading-space rules).
 */
export class DetokenizerStream implements TokenTextStream {
  private pending: Token[] = [];
  private readonly context: Token[] = [];

  constructor(private readonly model: LlamaModel) {}

  push(id: number): string {
    this.pending.push(id as Token);
    const text = this.model.detokenize(this.pending, false, this.context);
    if (text.endsWith('\uFFFD') && this.pending.length < 4) return '';
    return this.release(text);
  }

  flush(): string {
    return this.pending.length ? this.release(this.model.detokenize(this.pending, false, this.context)) : '';
  }

  private release(text: string): string {
    this.context.push(...this.pending);
    this.context.splice(0, Math.max(0, this.context.length - 8));
    this.pending = [];
    return text;
  }
}

export class GgufEngine {
  private readonly waiting: Job[] = [];
  /**
   * The context's sequences not generating now. All are taken at start and reused (history cleared): a disposed
   * sequence's id returns to the context only later, asynchronously.
   */
  private readonly free: LlamaContextSequence[] = [];
  private running = 0;
  private generated = 0;
  private closed = false;
  private failuresInARow = 0;

  constructor(readonly loaded: LoadedGguf, private readonly opts: { maxWaiting?: number; brokenAfterFailures?: number; log?: Logger } = {}) {
    while (loaded.context.sequencesLeft > 0) this.free.push(loaded.context.getSequence());
  }

  get maxBatch(): number {
    return this.loaded.context.totalSequences;
  }

  /** False once stopped or after `brokenAfterFailures` generations failed in a row inside llama.cpp. */
  get alive(): boolean {
    return !this.closed && this.failuresInARow < (this.opts.brokenAfterFailures ?? 3);
  }

  stats(): EngineStats {
    return {
      running: this.running, waiting: this.waiting.length, maxBatch: this.maxBatch, steps: this.generated,
      kvSlots: this.maxBatch, kvCapacity: this.loaded.contextSize, kvBytes: this.loaded.context.stateSize,
    };
  }

  /** Queues a request. Throws at once when the engine is stopping or the queue is full. */
  submit(req: GgufRequest): Promise<GgufResult> {
    if (this.closed) throw llmErrors.cancelled('the engine is stopping');
    if (this.waiting.length >= (this.opts.maxWaiting ?? 1024)) throw llmErrors.overloaded(`${this.waiting.length} requests are waiting; retry later`);
    return new Promise<GgufResult>((resolve, reject) => {
      this.waiting.push({ req, submitted: performance.now(), resolve, reject });
      this.startWaiting();
    });
  }

  /** Stops admitting; waiting requests fail with LLM_CANCELLED; running ones end at their next token. */
  async close(): Promise<void> {
    this.closed = true;
    for (const j of this.waiting.splice(0)) j.reject(llmErrors.cancelled('the engine stopped'));
    while (this.running > 0) await new Promise((r) => setTimeout(r, 10));
  }

  private fault(req: GgufRequest, tokens: number): Error | undefined {
    if (this.closed) return llmErrors.cancelled('the engine stopped');
    if (req.signal?.aborted) return llmErrors.cancelled('the client went away');
    if (Date.now() > req.deadline) return llmErrors.deadline(`the request did not finish within its deadline (${tokens} tokens generated)`);
    return undefined;
  }

  private startWaiting(): void {
    while (this.waiting.length && this.free.length) {
      const job = this.waiting.shift()!;
      const early = this.fault(job.req, 0);
      if (early) {
        job.reject(early);
        continue;
      }
      this.running++;
      const seq = this.free.pop()!;
      void this.generate(job, seq)
        .then(job.resolve, job.reject)
        .finally(async () => {
          await seq.clearHistory().catch((e: unknown) => this.opts.log?.error({ err: e }, 'clearing a llama.cpp sequence failed'));
          this.free.push(seq);
          this.running--;
          this.startWaiting();
        });
    }
  }

  private async generate(job: Job, seq: LlamaContextSequence): Promise<GgufResult> {
    const { req } = job;
    const out = new TextOutput(req.stop, new DetokenizerStream(this.loaded.model));
    const tokens: number[] = [];
    let ttftMs = 0;
    let finishReason: FinishReason = 'stop';
    let last = '';
    try {
      const it = seq.evaluate(req.ids as Token[], {
        temperature: req.temperature, topP: req.topP, topK: 0, ...(req.seed !== undefined ? { seed: req.seed } : {}), yieldEogToken: req.ignoreEos,
      });
      for await (const token of it) {
        if (!tokens.length) ttftMs = performance.now() - job.submitted;
        tokens.push(token);
        this.generated++;
        const d = out.push(token);
        const err = this.fault(req, tokens.length);
        if (err) throw err;
        if (d.stopped) {
          req.onText?.(d.text);
          break;
        }
        if (tokens.length >= req.maxTokens) {
          finishReason = 'length';
          req.onText?.(d.text + out.finish());
          break;
        }
        req.onText?.(d.text);
      }
      last = out.finish(); // end of generation: what was held back
      this.failuresInARow = 0;
    } catch (e) {
      if (!(e instanceof LlmError)) {
        this.failuresInARow++;
        this.opts.log?.error({ err: e, failuresInARow: this.failuresInARow }, 'llama.cpp generation failed');
      }
      throw e;
    }
    if (last) req.onText?.(last);
    return { tokens, text: out.text, finishReason, promptTokens: req.ids.length, ttftMs };
  }
}
