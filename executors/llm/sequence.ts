/**
 * One generating sequence's state, shared by the direct loop and the engine so both stop alike: sampled
 * tokens go through `accept`, which decides whether generation ends (EOS, a stop sequence, max tokens, or the
 * model's context) and returns the text that became final.
 */
import { Sampler, type SamplingParams } from './sampling.js';
import { TextOutput } from './text-output.js';
import type { TextTokenizer } from './tokenizer.js';

export type FinishReason = 'stop' | 'length';

export interface GenerateOptions extends SamplingParams {
  /** Completion tokens at most (EOS included when generated). */
  maxTokens: number;
  stop?: readonly string[];
  /** Keep going past EOS tokens (benchmarks). */
  ignoreEos?: boolean;
}

export interface Accepted {
  text: string;
  finished: boolean;
}

export class Sequence {
  readonly tokens: number[] = [];
  readonly sampler: Sampler;
  finishReason: FinishReason | undefined;
  /** Cached positions (prompt + fed tokens). */
  len = 0;
  private readonly output: TextOutput;

  constructor(
    readonly promptTokens: number,
    readonly opts: GenerateOptions,
    private readonly tokenizer: TextTokenizer,
    private readonly maxPositions: number,
  ) {
    this.sampler = new Sampler(opts);
    this.output = new TextOutput(opts.stop ?? [], tokenizer.stream());
  }

  get text(): string {
    return this.output.text;
  }

  /** The token the next decode step feeds (the last sampled one). */
  get lastToken(): number {
    return this.tokens[this.tokens.length - 1]!;
  }

  accept(token: number): Accepted {
    this.tokens.push(token);
    if (!this.opts.ignoreEos && this.tokenizer.eos.has(token)) return this.finish('stop', this.output.finish());
    const d = this.output.push(token);
    if (d.stopped) return this.finish('stop', d.text);
    // The next step would feed this token at position promptTokens + tokens - 1.
    if (this.tokens.length >= this.opts.maxTokens || this.promptTokens + this.tokens.length > this.maxPositions) {
      return this.finish('length', d.text + this.output.finish());
    }
    return { text: d.text, finished: false };
  }

  private finish(reason: FinishReason, text: string): Accepted {
    this.finishReason = reason;
    return { text, finished: true };
  }
}
