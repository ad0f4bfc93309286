/**
 * Resource-manager errors: stable codes, HTTP statuses per docs/architecture.md §4. Callers branch on `code`.
 */
import { CornserveError, isCornserveError } from '../functions/sdk/errors.js';

/** Fewer free devices in the whole inventory than asked for. 409. */
export class NotEnoughDevicesError extends CornserveError {
  constructor(readonly requested: number, readonly free: number) {
    super('INSUFFICIENT_DEVICES', `${requested} device(s) requested but only ${free} free`, 409, { requested, free });
  }
}

/** Enough devices in total, but no single node has `requested` free (allocations are colocated). 409. */
export class CannotColocateError extends CornserveError {
  constructor(readonly requested: number, readonly mostFreeOnOneNode: number) {
    super('INSUFFICIENT_DEVICES', `${requested} device(s) must be on one node but at most ${mostFreeOnOneNode} are free on any node`, 409, {
      requested,
      mostFreeOnOneNode,
    });
  }
}

/** A device that is not in the inventory, or not owned by the one freeing it. 500 (a bookkeeping bug). */
export class DeviceOwnershipError extends CornserveError {
  constructor(message: string) {
    super('DEVICE_OWNERSHIP', message, 500);
  }
}

/** No unit task with this id is deployed. 404. */
export class TaskNotFoundError extends CornserveError {
  constructor(readonly taskId: string) {
    super('TASK_NOT_FOUND', `task ${taskId} is not deployed`, 404, { taskId });
  }
}

/** The task is deploying, tearing down or failed, so it cannot be scaled. 409. */
export class TaskNotReadyError extends CornserveError {
  constructor(readonly taskId: string, readonly state: string) {
    super('TASK_NOT_READY', `task ${taskId} is ${state}, not ready`, 409, { taskId, state });
  }
}

/** A scale request that cannot be honoured as asked (0, or not a multiple of the executor size). 400. */
export class InvalidScaleError extends CornserveError {
  constructor(message: string) {
    super('INVALID_SCALE', message, 400);
  }
}

/** Scaling down would remove more executors than the task has (zero is allowed). 409. */
export class ScaleBelowMinimumError extends CornserveError {
  constructor(readonly taskId: string, readonly executors: number, readonly removing: number) {
    super('SCALE_BELOW_MINIMUM', `task ${taskId} has ${executors} executor(s); it cannot lose ${removing}`, 409, { taskId, executors, removing });
  }
}

/** close() was called; this resource manager deploys and scales nothing any more. 503. */
export class ResourceManagerClosedError extends CornserveError {
  constructor() {
    super('RESOURCES_CLOSED', 'the resource manager is shut down', 503);
  }
}

/**
 * A deploy failed and was rolled back. Keeps the cause's code and status when it has them (e.g. 409
 * INSUFFICIENT_DEVICES), else DEPLOY_FAILED / 500.
 */
export class DeployError extends CornserveError {
  constructor(readonly task: string, readonly taskId: string, override readonly cause: unknown) {
    const c = isCornserveError(cause) ? cause : undefined;
    super(c?.code ?? 'DEPLOY_FAILED', `cannot deploy ${task} (${taskId}): ${(cause as Error)?.message ?? String(cause)}; nothing was deployed`, c?.status ?? 500, {
      task,
      taskId,
      ...(c?.details !== undefined ? { cause: c.details } : {}),
    });
  }
}

/** The remote resource manager (ResourceManagerClient) could not be reached or answered nonsense. 503. */
export class ResourceManagerUnreachableError extends CornserveError {
  constructor(readonly url: string, reason: string) {
    super('RESOURCE_MANAGER_UNREACHABLE', `the resource manager at ${url} is unreachable: ${reason}`, 503, { url });
  }
}

/** A bad autoscaling policy: 422 naming the field (min, max, target, slo_ms). */
export class InvalidAutoscaleError extends CornserveError {
  constructor(readonly field: string, message: string) {
    super('INVALID_AUTOSCALE', `${field}: ${message}`, 422, { field });
  }
}

/** POST /task/autoscale on a platform started with --no-autoscale. */
export class AutoscalingOffError extends CornserveError {
  constructor() {
    super('AUTOSCALING_OFF', 'autoscaling is off on this platform (started with --no-autoscale); scale tasks with `cornserve scale`', 409);
  }
}

/** A deployment plan that cannot be applied (422, naming the plan's field); nothing was changed. */
export class InvalidPlanError extends CornserveError {
  constructor(field: string, message: string) {
    super('INVALID_PLAN', `${field}: ${message}; nothing was changed`, 422, { field });
  }
}
