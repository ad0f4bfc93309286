/** What the simulated executors share: a job (one invocation of one request) and the executor's bookkeeping. */
export interface SimJob {
  /** Unique per job in a run (the schedulers key requests by it). */
  id: number;
  /** Encoder: units (patches, frames × patches, audio units). */
  units: number;
  /** LLM: prompt tokens and tokens to generate. */
  promptTokens: number;
  /** LLM in a monolithic deployment: encoder units this request's own encoders add to its prefill step. */
  inlineUnits?: number;
  outputTokens: number;
  /** Called at each generated token (LLM), virtual ms. */
  onToken?(tMs: number): void;
  /** Called once when the invocation is done, virtual ms. */
  done(tMs: number): void;
}

export abstract class SimExecutor {
  /** Invocations routed here and not yet done (the dispatcher's count). */
  outstanding = 0;
  /** Invocations handed to it (their inputs arrived) and not yet done: what the executor itself holds. */
  holding = 0;
  /** Batches running now, and the most ever at once (the invariant: ≤ capacity). */
  running = 0;
  maxRunning = 0;
  batches = 0;

  constructor(
    readonly id: string,
    readonly node: number,
    /** Batches this executor may run at once. */
    readonly capacity: number,
  ) {}

  abstract submit(job: SimJob): void;

  protected started(): void {
    this.running++;
    this.batches++;
    if (this.running > this.maxRunning) this.maxRunning = this.running;
  }

  protected ended(): void {
    this.running--;
  }
}
