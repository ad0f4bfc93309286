/**
 * The autoscaler's inputs and outputs, as plain data. The signals and profiles are gathered by I/O code
 * (dispatcher, gateway, task managers, profiler); the decisions are made by pure modules in policies/
 * (injected clock, no I/O), so the live resource manager and the simulator run the same decision code.
 */

/** One point of a task's throughput–latency profile at a fixed concurrency and devices per executor. */
export interface ProfilePoint {
  devicesPerExecutor: number;
  concurrency: number;
  /** Completed invocations per second of ONE executor at this concurrency. */
  throughputRps: number;
  p50Ms: number;
  p99Ms: number;
}

/**
 * A task's profile: every measured point and its Pareto frontier (points no other point beats on both
 * higher throughput and lower p99). Stored under the unit-task key and the device kind, so an equivalent
 * task in another app reuses it.
 */
export interface TaskProfile {
  taskKey: string;
  deviceKind: string; // e.g. "cpu", "nvidia-a100"
  points: ProfilePoint[];
  frontier: ProfilePoint[];
  measuredAt: number; // epoch ms
}

/** The load on one unit task, summed over every dispatcher replica, over a window ending at `at`. */
export interface TaskLoad {
  taskId: string;
  at: number; // epoch ms (injected clock)
  windowMs: number;
  /** Invocations that arrived per second over the window. */
  arrivalRps: number;
  /** Invocations in flight now (sent to an executor or held waiting for one). */
  inFlight: number;
  /** Invocations held by the dispatcher because no executor is ready (scale from zero). */
  held: number;
  /** Queue depth and busy fraction reported by the executors, when they report them. */
  queueDepth?: number;
  /**
   * Requests the task's executors hold now (served or queued), by their own report; absent when they do not report
   * it. Unlike `inFlight` (the dispatcher's count) it leaves out invocations leased to the task that still wait for
   * their producers, so it is load these executors serve, and a queue building on them shows at once.
   */
  executorInFlight?: number;
  /**
   * Executors that reported `executorInFlight` (the ready ones: an executor still starting serves nothing yet, so a
   * queue on the others is judged against these alone); absent = every executor the task has.
   */
  executorsServing?: number;
  busyFraction?: number;
}

/** The load on one app at the gateway, and the shape of its graphs. */
export interface AppLoad {
  appId: string;
  at: number;
  windowMs: number;
  requestRps: number;
  /** Mean unit-task invocations per app request, by task id, from the app's recorded graphs. */
  invocationsPerRequest: Record<string, number>;
}

/** What one executor of a task can serve, and where the figure comes from. */
export interface TaskCapacity {
  taskId: string;
  /** Sustainable invocations per second per executor (at the policy's latency target). */
  perExecutorRps: number;
  source: 'profile' | 'live' | 'default';
}

/** A task's autoscaling policy: in-flight per executor, or a latency SLO read off the profile. */
export type AutoscalePolicy =
  | { min: number; max: number; target: number }
  | { min: number; max: number; sloMs: number };

/** One scaling decision, kept for `cornserve tasks` and the logs. */
export interface ScaleDecision {
  taskId: string;
  at: number;
  from: number; // executors before
  to: number; // executors after
  reason: string;
}

/** One executor's live service, as the dispatcher observed it (EWMAs over its recent calls). */
export interface ExecutorLiveStats {
  executorId: string;
  taskId: string;
  /** EWMA of the call latency (ms), queueing inside the executor included. */
  latencyMs: number;
  /** EWMA of the executor's in-flight calls when a call started (this one included). */
  concurrency: number;
  /** Calls folded in so far. */
  samples: number;
  updatedAt: number; // epoch ms
}
