/**
 * Turns generated token ids into the text a client sees: valid UTF-8 at every step (incomplete sequences held
 * back), stop sequences cut out (the text ends just before the first occurrence; the stop is not included),
 * and any text that could still become the start of a stop sequence held back until it cannot.
 */
import { Utf8Stream, type TokenTextStream } from './tokenizer.js';

export interface Delta {
  /** Text that became final with this token ('' when held back). */
  text: string;
  /** A stop sequence completed: generation ends, `text` is the last delta. */
  stopped: boolean;
}

export class TextOutput {
  private pending = '';
  private emitted = '';
  private done = false;

  /** `utf8`: the tokenizer's text stream (the byte-level one by default). */
  constructor(private readonly stops: readonly string[] = [], private readonly utf8: TokenTextStream = new Utf8Stream()) {}

  /** Everything emitted so far. */
  get text(): string {
    return this.emitted;
  }

  push(id: number): Delta {
    if (this.done) return { text: '', stopped: true };
    this.pending += this.utf8.push(id);
    return this.release(false);
  }

  /** End of generation (EOS / length): releases what was held back. */
  finish(): string {
    if (this.done) return '';
    this.pending += this.utf8.flush();
    return this.release(true).text;
  }

  private release(final: boolean): Delta {
    let cut = -1;
    for (const s of this.stops) {
      const i = this.pending.indexOf(s);
      if (i >= 0 && (cut < 0 || i < cut)) cut = i;
    }
    if (cut >= 0) {
      this.done = true;
      return this.emit(this.pending.slice(0, cut), '', true);
    }
    if (final) {
      this.done = true;
      return this.emit(this.pending, '', false);
    }
    const hold = this.heldBack();
    return this.emit(this.pending.slice(0, this.pending.length - hold), this.pending.slice(this.pending.length - hold), false);
  }

  /** Length of the longest suffix of `pending` that is a proper prefix of a stop sequence. */
  private heldBack(): number {
    let hold = 0;
    for (const s of this.stops) {
      for (let k = Math.min(s.length - 1, this.pending.length); k > hold; k--) {
        if (this.pending.endsWith(s.slice(0, k))) {
          hold = k;
          break;
        }
      }
    }
    // Never split a surrogate pair between chunks.
    const at = this.pending.length - hold;
    if (hold > 0 && at > 0 && /[\uD800-\uDBFF]/.test(this.pending[at - 1]!)) hold++;
    return hold;
  }

  private emit(text: string, rest: string, stopped: boolean): Delta {
    this.pending = rest;
    this.emitted += text;
    return { text, stopped };
  }
}
