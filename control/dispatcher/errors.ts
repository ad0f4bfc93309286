/**
 * The dispatcher's error catalogue. Every error has a stable `code` and HTTP status; the body on the
 * wire is `{error: {code, message, details?}}` (lib/http.ts). Callers branch on `code`, never on text.
 *
 *  GRAPH_INVALID      400  DataForwards do not pair up (consumed but never produced, produced but never consumed, produced twice)
 *  EVENT_INVALID      400  not a CloudEvent, wrong type, or a bad `deadline` extension / header
 *  DEADLINE_INVALID   400  the `deadline` extension / x-cornserve-deadline header is not epoch milliseconds
 *  TASK_NOT_DEPLOYED  404  an invocation's unit task is not in the Store
 *  TASK_NOT_READY     409  the unit task exists but is deploying, tearing down or failed
 *  NO_EXECUTOR        503  the unit task is ready but none of its executors is
 *  TASK_FAILED        502  an executor call failed (HTTP error, connection lost, bad reply, stream broke)
 *  DEADLINE_EXCEEDED  504  the graph's deadline passed before it finished
 *  STORE_UNAVAILABLE  503  the Store could not be read (Redis down); retry later
 *  DISPATCH_CANCELLED 499  the caller went away (nobody reads this one; it is for logs and metrics)
 */
import { CornserveError } from '../../functions/sdk/errors.js';

export type DispatcherErrorCode =
  | 'GRAPH_INVALID'
  | 'EVENT_INVALID'
  | 'DEADLINE_INVALID'
  | 'TASK_NOT_DEPLOYED'
  | 'TASK_NOT_READY'
  | 'NO_EXECUTOR'
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

export class NoExecutorError extends DispatcherError {
  constructor(readonly taskId: string, taskName: string, executors: number) {
    super('NO_EXECUTOR', `unit task ${taskName} (${taskId}) has no ready executor (${executors} known, none ready)`, 503, { taskId });
  }
}

/** Where a failure happened: the invocation, its task and the executor it was sent to. */
export interface FailureSite {
  invocation: number;
  task: string;
  taskId: string;
  executorId: string;
  url: string;
}

/** Executor statuses that mean "this input is bad": the caller gets them as they are, not a 502. */
const INPUT_ERROR_STATUSES = new Set([400, 413, 422]);

export class TaskFailedError extends DispatcherError {
  constructor(site: FailureSite, what: string, extra: { status?: number; [k: string]: unknown } = {}) {
    super(
      'TASK_FAILED',
      `invocation ${site.invocation} (${site.task}) failed on executor ${site.executorId}: ${what}`,
      extra.status !== undefined && INPUT_ERROR_STATUSES.has(extra.status) ? extra.status : 502,
      { ...site, ...extra },
    );
  }
}

export class DeadlineExceededError extends DispatcherError {
  constructor(deadline: number, pending: FailureSite[]) {
    const waiting = pending.map((s) => `invocation ${s.invocation} (${s.task}) on executor ${s.executorId}`).join(', ');
    super(
      'DEADLINE_EXCEEDED',
      `deadline ${new Date(deadline).toISOString()} passed${waiting ? ` while waiting for ${waiting}` : ''}`,
      504,
      { deadline, pending },
    );
  }
}

export class DispatchCancelledError extends DispatcherError {
  constructor(reason: string) {
    super('DISPATCH_CANCELLED', `dispatch cancelled: ${reason}`, 499);
  }
}

export class StoreUnavailableError extends DispatcherError {
  constructor(what: string, cause: unknown) {
    super('STORE_UNAVAILABLE', `cannot ${what}: ${(cause as Error)?.message ?? String(cause)}`, 503);
  }
}
