/**
 * The SDK's error catalogue. Every error has a stable `code` and an HTTP status where one applies.
 * `isCornserveError` is realm-safe (a Symbol.for marker), because the app-function runtime, worker threads
 * and executors may each load their own copy of this module.
 */
import type { z } from 'zod';

const MARK = Symbol.for('cornserve.error');

export interface ErrorJSON {
  code: string;
  message: string;
  details?: unknown;
}

export class CornserveError extends Error {
  readonly [MARK] = true;
  constructor(
    readonly code: string,
    message: string,
    readonly status: number = 500,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = new.target.name;
  }
  toJSON(): ErrorJSON {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export function isCornserveError(e: unknown): e is CornserveError {
  return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[MARK] === true;
}

/** A zod issue, reduced to what a client needs: where and what. */
export interface FieldIssue {
  path: string;
  message: string;
}

export function formatIssues(issues: readonly z.core.$ZodIssue[]): FieldIssue[] {
  return issues.map((i) => ({ path: i.path.length ? i.path.map(String).join('.') : '(root)', message: i.message }));
}

/** Input (a task's, a request's, a config's) does not match its schema. 422. */
export class ValidationError extends CornserveError {
  constructor(what: string, readonly issues: FieldIssue[]) {
    super('INVALID_INPUT', `${what}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, 422, issues);
  }
}

/** Record/replay used the wrong way: nested record, record during replay, a context reused, ... */
export class RecordReplayError extends CornserveError {
  constructor(message: string) {
    super('TASK_CONTEXT_MISUSE', message, 500);
  }
}

/** The second (replay) run of invoke() did not make the same unit-task calls as the record run. */
export class DeterminismViolationError extends CornserveError {
  constructor(message: string) {
    super('TASK_NONDETERMINISTIC', `${message} (invoke() must be deterministic: control flow may depend on the input only, never on task outputs)`, 500);
  }
}

/** A Stream used the wrong way: iterated twice, transformed twice, iterated after being moved. */
export class StreamError extends CornserveError {
  constructor(message: string) {
    super('STREAM_MISUSE', message, 500);
  }
}

/** The task graph could not be executed; `status` carries the dispatcher's answer. */
export class DispatchError extends CornserveError {
  constructor(message: string, status = 502, details?: unknown, code = 'TASK_DISPATCH_FAILED') {
    super(code, message, status, details);
  }
}

/** An app module is not a valid app; `problems` lists everything wrong with it. */
export class AppDefinitionError extends CornserveError {
  constructor(readonly problems: string[]) {
    super('APP_INVALID', `invalid app: ${problems.join('; ')}`, 400, problems);
  }
}

/** An app's serve() used a task it did not declare in `tasks`, so it was never deployed. */
export class UndeclaredTaskError extends CornserveError {
  constructor(taskName: string) {
    super('APP_UNDECLARED_TASK', `task ${taskName} is used by serve() but not declared in the app's tasks, so it is not deployed`, 500);
  }
}
