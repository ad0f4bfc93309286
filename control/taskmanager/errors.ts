/**
 * Task-manager errors: stable codes; messages carry the executor's last output lines, because a start-up
 * failure is almost always explained there.
 */
import { CornserveError } from '../../functions/sdk/errors.js';

const tailText = (logTail: string[] | undefined) => (logTail?.length ? `; last output:\n  ${logTail.slice(-10).join('\n  ')}` : '');

/** The executor process exited before it became healthy. 503. */
export class ExecutorStartError extends CornserveError {
  constructor(readonly executorId: string, exit: { code: number | null; signal: string | null; logTail?: string[] }) {
    const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
    super('EXECUTOR_START_FAILED', `executor ${executorId} ${how} while starting${tailText(exit.logTail)}`, 503, {
      executorId,
      code: exit.code,
      signal: exit.signal,
      logTail: exit.logTail ?? [],
    });
  }
}

/** The executor did not answer its health check in time; it was stopped. 504. */
export class ExecutorStartTimeoutError extends CornserveError {
  constructor(readonly executorId: string, readonly timeoutMs: number, logTail?: string[]) {
    super('EXECUTOR_START_TIMEOUT', `executor ${executorId} was not healthy within ${timeoutMs} ms${tailText(logTail)}`, 504, {
      executorId,
      timeoutMs,
      logTail: logTail ?? [],
    });
  }
}

/** The executor was removed (scale-down, teardown) before it finished starting. 409. */
export class ExecutorRemovedError extends CornserveError {
  constructor(readonly executorId: string) {
    super('EXECUTOR_REMOVED', `executor ${executorId} was removed while starting`, 409, { executorId });
  }
}

/** The task's descriptor gives no sample invocation, so the profiler cannot drive it. 422. */
export class NotProfilableError extends CornserveError {
  constructor(readonly taskId: string, readonly taskClass: string) {
    super('NOT_PROFILABLE', `task ${taskId} (${taskClass}) cannot be profiled: its descriptor gives no sample invocation (profiling.sample)`, 422, { taskId, taskClass });
  }
}

/** A profile of this task is already running. 409. */
export class ProfileInProgressError extends CornserveError {
  constructor(readonly taskId: string) {
    super('PROFILE_IN_PROGRESS', `task ${taskId} is being profiled already; wait for that run`, 409, { taskId });
  }
}
