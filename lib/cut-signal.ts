/**
 * A cut: the cheap form of an AbortController for cancellations that are checked on every request but almost never
 * happen (a request's client leaving, its deadline, a graph's first failure, a shutdown). An AbortController with its
 * EventTarget costs a few microseconds to make and each listener about one more; a Cut is a flag, a reason and an
 * array of listeners. Its signal side is the SDK's CutSignal (which an AbortSignal also satisfies, so code that takes
 * a CutSignal takes either); `abortSignal` is a real AbortSignal following the cut, made only if something asks.
 */
import type { CutSignal } from '../functions/sdk/index.js';

export type { CutSignal };

export class Cut implements CutSignal {
  aborted = false;
  reason: unknown = undefined;
  #listeners: (() => void)[] | undefined;
  #abortSignal: AbortSignal | undefined;

  /** Listeners run once, in the order added, on the first abort(); one added after it never runs (as with AbortSignal). */
  addEventListener(_type: 'abort', listener: () => void, _opts?: { once?: boolean }): void {
    if (!this.aborted) (this.#listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.#listeners?.indexOf(listener) ?? -1;
    if (at >= 0) this.#listeners!.splice(at, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners ?? [];
    this.#listeners = undefined;
    for (const listener of listeners) listener();
  }

  /** An AbortSignal that aborts with the cut (for code that needs a real one: user code, fetch); made on first use. */
  get abortSignal(): AbortSignal {
    if (!this.#abortSignal) {
      const controller = new AbortController();
      this.#abortSignal = controller.signal;
      if (this.aborted) controller.abort(this.reason);
      else this.addEventListener('abort', () => controller.abort(this.reason));
    }
    return this.#abortSignal;
  }
}
