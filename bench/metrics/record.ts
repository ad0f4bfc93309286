/** One request's outcome: what the live client measures and what the simulator will produce. Times in ms. */
export interface RequestRecord {
  index: number;
  /** text | image | audio | video | dataset */
  kind: string;
  /** When the arrival process asked for it, from the run's start. */
  scheduledMs: number;
  /** When it was actually sent (later than scheduled only when --max-concurrency held it back). */
  sentMs: number;
  ok: boolean;
  /** HTTP status; 0 when no response came (connection refused or reset, client timeout, cancelled). */
  status: number;
  /** The server's error code (e.g. `deadline_exceeded`, `TASK_FAILED`), or the client's (`ECONNREFUSED`, `CLIENT_TIMEOUT`, `CANCELLED`). */
  errorCode?: string;
  errorMessage?: string;
  /** Time to the first token (chat) or first chunk (invoke). */
  ttftMs?: number;
  /** End-to-end latency: sent → last byte (for a failed request: sent → failure; never in the aggregates). */
  e2elMs?: number;
  /** Gaps between successive tokens (chunks). */
  itlMs: number[];
  inputTokens: number;
  outputTokens: number;
}

/** TPOT as vLLM defines it: (E2EL − TTFT) / (output tokens − 1), for requests with more than one token. */
export function tpotMs(r: RequestRecord): number | undefined {
  if (!r.ok || r.ttftMs === undefined || r.e2elMs === undefined || r.outputTokens <= 1) return undefined;
  return (r.e2elMs - r.ttftMs) / (r.outputTokens - 1);
}
