/**
 * Cancellation of the sidecar's waits (memory, data). `Cancellable` is the part of AbortSignal they use, so an
 * AbortSignal works; `Cancel` is the server's per-request implementation: creating an AbortController costs
 * microseconds, and the server makes one cancellation for every request it serves.
 */
export interface Cancellable {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class Cancel implements Cancellable {
  aborted = false;
  private listeners: Array<() => void> | undefined;

  addEventListener(_type: 'abort', listener: () => void): void {
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.listeners!.splice(i, 1);
  }

  /** Fires every listener once. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.listeners ?? [];
    this.listeners = undefined;
    for (const l of listeners) l();
  }
}
