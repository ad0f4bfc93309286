/**
 * The dispatcher's error catalogue. Every error has a stable `code` and HTTP status; the body on the
 * wire is `{error: {code, message, details?}}` (lib/http.ts). Callers branch on `code`, never on text.
 *
 *  GRAPH_INVALID      400  DataForwards do not pair up (consumed but never produced, produced but never consumed, produced twice)
 *  EVENT_INVALID      400  not a CloudEvent, wrong type, or a bad `deadline` extension / header
 *  DEADLINE_INVALID   400  the `deadline` extension / x-cornserve-deadline header is not epoch milliseconds
 *  TASK_NOT_DEPLOYED  404  an invocation's unit task is not in the Store
 *  TASK_NOT_READY     409  the unit task exists but is deploying, tearing down or failed
 *  NO_EXECUTOR        503  the unit task is ready but none of its executors is (Retry-After: NO_EXECUTOR_RETRY_AFTER_S), or it
 *                          has none at all, scaled to 0 with no autoscaling policy (the message names `cornserve scale`)
 *  TASK_FAILED        502  an executor call failed (connection lost, bad reply, stream broke); an executor's own
 *                          error reply keeps ITS code and, for input errors and 503/504, its status (TaskFailedError)
 *  DEADLINE_EXCEEDED  504  the graph's deadline passed before it finished
 *  HOLD_QUEUE_FULL    503  a task starting from zero already holds its cap of waiting invocations (Retry-After)
 *  STORE_UNAVAILABLE  503  the Store could not be read (Redis down); retry later (Retry-After: STORE_RETRY_AFTER_S)
 *  DISPATCH_CANCELLED 499  the caller went away (nobody reads this one; it is for logs and metrics)
 */
import { CornserveError } from '../functions/sdk/errors.js';
import { redactInternal, redactJson } from './redact.js';
import { STORE_RETRY_AFTER_S, StoreError } from './store-errors.js';

export type DispatcherErrorCode =
  | 'GRAPH_INVALID'
  | 'EVENT_INVALID'
  | 'DEADLINE_INVALID'
  | 'TASK_NOT_DEPLOYED'
  | 'TASK_NOT_READY'
  | 'NO_EXECUTOR'
  | 'HOLD_QUEUE_FULL'
  | 'TASK_FAILED'
  | 'DEADLINE_EXCEEDED'
  | 'STORE_UNAVAILABLE'
  | 'DISPATCH_CANCELLED';

export class DispatcherError extends CornserveError {
  declare readonly code: DispatcherErrorCode;
  constructor(code: DispatcherErrorCode, message: string, status: number, details?: unknown) {
    super(code, message, status, details);
  }
}

export class GraphInvalidError extends DispatcherError {
  constructor(message: string, details?: unknown) {
    super('GRAPH_INVALID', message, 400, details);
  }
}

export class EventInvalidError extends DispatcherError {
  constructor(message: string) {
    super('EVENT_INVALID', message, 400);
  }
}

export class DeadlineInvalidError extends DispatcherError {
  constructor(message: string) {
    super('DEADLINE_INVALID', message, 400);
  }
}

export class TaskNotDeployedError extends DispatcherError {
  constructor(readonly taskId: string, taskName: string) {
    super('TASK_NOT_DEPLOYED', `unit task ${taskName} (${taskId}) is not deployed; register an app that declares it`, 404, { taskId });
  }
}

export class TaskNotReadyError extends DispatcherError {
  constructor(readonly taskId: string, taskName: string, state: string) {
    super('TASK_NOT_READY', `unit task ${taskName} (${taskId}) is ${state}, not ready`, 409, { taskId, state });
  }
}

/**
 * Seconds a caller of a task with no ready executor is told to wait (Retry-After): about what an executor's
 * restart or a scale-up from zero takes.
 */
export const NO_EXECUTOR_RETRY_AFTER_S = 5;

export class NoExecutorError extends DispatcherError {
  /**
   * `scaledToZero`: the task has no executor at all and no autoscaling policy (it was scaled to 0 by hand), so none
   * comes back by itself: the message says so and names the command that brings one back. Retry-After stays (an
   * operator's scale to zero is meant to be temporary, and a client retrying after it is served once it is undone).
   */
  constructor(readonly taskId: string, taskName: string, executors: number, scaledToZero = false) {
    super(
      'NO_EXECUTOR',
      scaledToZero
        ? `unit task ${taskName} (${taskId}) has no executor: it was scaled to 0 and no autoscaling policy starts one; ` +
          `\`cornserve scale ${taskId} 1\` brings one back`
        : `unit task ${taskName} (${taskId}) has no ready executor (${executors} known, none ready); retry in ${NO_EXECUTOR_RETRY_AFTER_S} s`,
      503,
      { taskId, retryAfterS: NO_EXECUTOR_RETRY_AFTER_S, ...(scaledToZero ? { scaledToZero } : {}) },
    );
  }
}

/**
 * A task autoscaled from zero holds its invocations while an executor starts; past the per-task cap of held
 * invocations (per dispatcher) new ones are refused at once.
 */
export class HoldQueueFullError extends DispatcherError {
  constructor(readonly taskId: string, taskName: string, cap: number) {
    super(
      'HOLD_QUEUE_FULL',
      `unit task ${taskName} (${taskId}) has no executor yet (starting from zero) and already ${cap} invocations wait for one; retry in ${NO_EXECUTOR_RETRY_AFTER_S} s`,
      503,
      { taskId, retryAfterS: NO_EXECUTOR_RETRY_AFTER_S },
    );
  }
}

/** Where a failure happened: the invocation, its task and the executor it was sent to (internal: logs and traces only). */
export interface FailureSite {
  invocation: number;
  task: string;
  taskId: string;
  executorId: string;
  url: string;
}

/** What a client learns about where a failure happened: which task, never where it ran. */
export const publicSite = (s: FailureSite) => ({ invocation: s.invocation, task: s.task, taskId: s.taskId });

/**
 * Executor statuses the caller gets as they are: bad input (the caller can fix it) and "retry later" (503/504).
 * Any other failure of an executor is the platform's: 502.
 */
const PASSED_STATUSES = new Set([400, 413, 415, 422, 429, 503, 504]);

/**
 * An executor call failed. The client sees which task failed (name, id, invocation) and why, never the
 * executor's id or address: those stay on the error (`site`, `internal`) for the dispatcher's log and span.
 *  - an executor's error reply keeps the executor's own code (`MODEL_INPUT_CORRUPT`, `ERIC_URL_NOT_ALLOWED`, ...)
 *    and its status when the caller can act on it (PASSED_STATUSES), else 502; its details come as `executorDetails`;
 *  - a transport failure (unreachable, connection lost, bad reply, stream broke) is `TASK_FAILED` 502.
 */
export class TaskFailedError extends CornserveError {
  /** The executor's error reply body as it came (the dispatcher reads `producer_failed` in it). */
  readonly executorBody: unknown;
  constructor(
    readonly site: FailureSite,
    what: string,
    opts: { code?: string; status?: number; executorBody?: unknown; executorDetails?: unknown; internal?: string; notDelivered?: boolean; keep?: string[] } = {},
  ) {
    const also = [site.executorId];
    const keep = opts.keep ?? [];
    super(
      opts.code ?? 'TASK_FAILED',
      redactInternal(`task ${site.task} failed: ${what}`, also, keep),
      opts.status !== undefined && PASSED_STATUSES.has(opts.status) ? opts.status : 502,
      { ...publicSite(site), ...(opts.executorDetails !== undefined ? { executorDetails: redactJson(opts.executorDetails, also, keep) } : {}) },
    );
    this.executorBody = opts.executorBody;
    this.notDelivered = opts.notDelivered ?? false;
    this.internal = `invocation ${site.invocation} (${site.task}) on executor ${site.executorId} at ${site.url}: ${opts.internal ?? what}`;
  }
  /** The full story with the executor's id and address, for logs and spans only. */
  readonly internal: string;
  /**
   * The request never reached the executor (its connection was refused: the process is gone, e.g. killed and not yet
   * seen by its task manager), so sending it to another executor cannot run it twice.
   */
  readonly notDelivered: boolean;
}

export class DeadlineExceededError extends DispatcherError {
  constructor(deadline: number, pending: FailureSite[]) {
    const waiting = pending.map((s) => `invocation ${s.invocation} (${s.task})`).join(', ');
    super(
      'DEADLINE_EXCEEDED',
      `deadline ${new Date(deadline).toISOString()} passed${waiting ? ` while waiting for ${waiting}` : ''}`,
      504,
      { deadline, pending: pending.map(publicSite) },
    );
    this.internal = pending.map((s) => `invocation ${s.invocation} (${s.task}) on executor ${s.executorId} at ${s.url}`).join(', ');
  }
  /** Where the pending calls ran, for logs only. */
  readonly internal: string;
}

export class DispatchCancelledError extends DispatcherError {
  constructor(reason: string) {
    super('DISPATCH_CANCELLED', `dispatch cancelled: ${reason}`, 499);
  }
}

/** The store error's own message (the platform's words) when it is one; another failure's text is for logs only. */
export class StoreUnavailableError extends DispatcherError {
  constructor(what: string, cause: unknown) {
    super('STORE_UNAVAILABLE', `cannot ${what}: ${cause instanceof StoreError ? cause.message : 'the store cannot be reached'}`, 503, { retryAfterS: STORE_RETRY_AFTER_S });
    this.cause = cause;
  }
}
