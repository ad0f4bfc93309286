/**
 * Where a simulated executor's work runs. A GPU is a device of its own: a batch that takes 30 ms takes 30 ms
 * whatever the other devices do (`IndependentDevice`). Our local platform's "devices" are processes on one
 * machine's CPU cores: when more workloads are busy than the node has cores, each runs slower
 * (`SharedCores`: processor sharing, every busy workload progresses at min(1, cores / busy) of its solo speed).
 * The executors ask for `workMs` of solo time and are called back when it is done; which of the two ran it is
 * not their business.
 */
import type { EventQueue } from './queue.js';

export interface Compute {
  /** Runs `workMs` of work (the time it takes alone on its device or core) and then calls `done`. */
  run(workMs: number, done: () => void): void;
}

/** A device of its own (a GPU): the work takes its solo time. */
export class IndependentDevice implements Compute {
  constructor(private readonly events: EventQueue) {}

  run(workMs: number, done: () => void): void {
    this.events.after(workMs, done);
  }
}

interface Work { left: number; done: () => void }

/**
 * Processor sharing over `cores` cores (egalitarian: each busy workload gets the same share, at most one core).
 * Between two changes of the busy count every workload's remaining solo time falls at rate min(1, cores/busy);
 * at each change the remaining times are brought up to date and the next completion is scheduled again. The
 * event queue cannot cancel, so a superseded completion event is recognised by its generation and ignored.
 * Deterministic: work that ends at the same instant completes in the order it started.
 */
export class SharedCores implements Compute {
  readonly #busy: Work[] = [];
  #since = 0;
  #generation = 0;
  /** The most workloads ever busy at once (a run's report of how oversubscribed the node was). */
  maxBusy = 0;

  constructor(private readonly events: EventQueue, readonly cores: number) {
    if (!(cores > 0) || !Number.isFinite(cores)) throw new RangeError(`a node's shared cores must be a positive number, got ${cores}`);
  }

  /** The speed of each busy workload now, as a fraction of its solo speed. */
  get rate(): number {
    return this.#busy.length <= this.cores ? 1 : this.cores / this.#busy.length;
  }

  get busy(): number {
    return this.#busy.length;
  }

  run(workMs: number, done: () => void): void {
    if (!(workMs >= 0)) throw new RangeError(`work of ${workMs} ms cannot be run`);
    this.#advance();
    this.#busy.push({ left: workMs, done });
    if (this.#busy.length > this.maxBusy) this.maxBusy = this.#busy.length;
    this.#schedule();
  }

  /** Brings every busy workload's remaining solo time up to now. */
  #advance(): void {
    const now = this.events.now;
    const progressed = (now - this.#since) * this.rate;
    this.#since = now;
    if (progressed <= 0) return;
    for (const w of this.#busy) w.left -= progressed;
  }

  #schedule(): void {
    const generation = ++this.#generation;
    if (!this.#busy.length) return;
    let least = Infinity;
    for (const w of this.#busy) if (w.left < least) least = w.left;
    this.events.after(Math.max(0, least) / this.rate, () => {
      if (generation !== this.#generation) return; // superseded by a later change of the busy set
      this.#advance();
      // Work within a rounding error of done is done (remaining times are differences of floating-point sums).
      const eps = 1e-9 * Math.max(1, this.events.now);
      const finished: Work[] = [];
      let keep = 0;
      for (const w of this.#busy) {
        if (w.left <= eps) finished.push(w);
        else this.#busy[keep++] = w;
      }
      this.#busy.length = keep;
      this.#schedule();
      // Callbacks last (in start order, as #busy keeps it): one may start new work, and run() brings the set up to date.
      for (const w of finished) w.done();
    });
  }
}
