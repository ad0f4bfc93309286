/**
 * Wraps the streaming last output so the dispatcher learns how it ends — normally, broken, or closed
 * early by its consumer (even before the first read: a plain async generator's finally would not run then).
 * Single use: iterating it twice continues the same iterator.
 */
export interface StreamHooks {
  /** Maps a read error to the error the consumer sees. */
  onError(e: unknown): Error;
  /** Called once, however the stream ends; awaited before the consumer sees the end. */
  onEnd(): Promise<void>;
  /** The consumer stopped early (break / return()): cancel the source. */
  onClose(): void;
  /** A failure that already ended the graph (deadline, caller gone): the next read throws it, even if data is buffered. */
  failed(): Error | undefined;
}

export function guardStream(source: AsyncIterable<string>, hooks: StreamHooks): AsyncIterableIterator<string> {
  let it: AsyncIterator<string> | undefined;
  let ended = false;
  const end = async () => {
    if (ended) return;
    ended = true;
    await hooks.onEnd();
  };
  return {
    async next(): Promise<IteratorResult<string>> {
      if (ended) return { done: true, value: undefined };
      it ??= source[Symbol.asyncIterator]();
      try {
        const failure = hooks.failed();
        if (failure) throw failure;
        const r = await it.next();
        if (r.done) await end();
        return r;
      } catch (e) {
        const error = hooks.onError(e);
        await end();
        throw error;
      }
    },
    async return(): Promise<IteratorResult<string>> {
      if (!ended) {
        hooks.onClose();
        await it?.return?.().catch(() => undefined);
        await end();
      }
      return { done: true, value: undefined };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}
