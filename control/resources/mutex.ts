/**
 * Async mutual exclusion: `Mutex` runs one critical section at a time, in arrival order; `KeyedMutex`
 * keeps one such queue per key (per task id) and forgets a key once its queue is empty.
 */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

export class KeyedMutex {
  private readonly queues = new Map<string, { mutex: Mutex; users: number }>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const q = this.queues.get(key) ?? { mutex: new Mutex(), users: 0 };
    this.queues.set(key, q);
    q.users++;
    try {
      return await q.mutex.run(fn);
    } finally {
      if (--q.users === 0) this.queues.delete(key);
    }
  }

  /** Keys with a critical section running or waiting (for tests and diagnostics). */
  busyKeys(): string[] {
    return [...this.queues.keys()];
  }
}
