/**
 * Errors of the executor scaffolding (router ↔ engine ↔ workers). One class, stable codes, an HTTP status
 * each. Errors cross threads and processes as `WireError` ({code, message, status, details?}) and are
 * rebuilt with `fromWire`, so a worker's MODEL_INPUT_CORRUPT reaches the HTTP client with its code and
 * status intact. Built on CornserveError, so lib/http's errorHandler answers them as-is (realm-safe marker).
 */
import { CornserveError, isCornserveError } from '../functions/sdk/errors.js';
import { errorCatalogue } from './error-catalogue.js';

const catalogue = errorCatalogue({
  /** The engine process exited (or never became ready); every pending request fails with this. */
  ENGINE_DEAD: ['EXECUTOR_ENGINE_DEAD', 503],
  /** The engine process lives but stopped answering the router's heartbeat; it is killed and pending requests fail. */
  ENGINE_HUNG: ['EXECUTOR_ENGINE_HUNG', 503],
  /** The engine did not report ready within the start timeout. */
  ENGINE_START_TIMEOUT: ['EXECUTOR_ENGINE_START_TIMEOUT', 503],
  /** A request passed its deadline while queued or running. */
  DEADLINE_EXCEEDED: ['EXECUTOR_DEADLINE_EXCEEDED', 504],
  /** The request was cancelled (client went away, router shut down). */
  CANCELLED: ['EXECUTOR_CANCELLED', 503],
  /** A worker thread died or failed to start; the engine is fail-stop after this. */
  WORKER_DIED: ['EXECUTOR_WORKER_DIED', 503],
  /** A preprocessing thread crashed while handling an item (the item fails, the thread is replaced). */
  PREPROCESS_CRASHED: ['EXECUTOR_PREPROCESS_CRASHED', 500],
  /** Too many requests are queued; retry later. */
  OVERLOADED: ['EXECUTOR_OVERLOADED', 503],
  /** A message on an internal link did not match the protocol (a bug, or mismatched versions). */
  PROTOCOL: ['EXECUTOR_PROTOCOL', 500],
  /** A shared-memory ring or all-reduce was closed or aborted while in use. */
  CHANNEL_CLOSED: ['EXECUTOR_CHANNEL_CLOSED', 503],
  /** Anything else thrown inside an engine or worker. */
  INTERNAL: ['EXECUTOR_INTERNAL', 500],
  /** The x-cornserve-deadline header is not epoch milliseconds (executors/common/deadline.ts). */
  BAD_DEADLINE: ['EXECUTOR_BAD_DEADLINE', 400],
});
export const ExecutorErrorCode = catalogue.codes;
export type ExecutorErrorCode = (typeof ExecutorErrorCode)[keyof typeof ExecutorErrorCode];

/** An error as it travels over ZeroMQ or a shared-memory ring. */
export interface WireError {
  code: string;
  message: string;
  status: number;
  details?: unknown;
}

export class ExecutorError extends CornserveError {
  constructor(code: ExecutorErrorCode | string, message: string, status?: number, details?: unknown) {
    super(code, message, status ?? catalogue.status(code) ?? 500, details);
  }
}

export const executorError = (code: ExecutorErrorCode, message: string, details?: unknown) => new ExecutorError(code, message, undefined, details);

/**
 * "This request failed because the producer of its input did": every executor whose sidecar receive fails with
 * SIDECAR_PRODUCER_FAILED puts `producer_failed: true` in its error's details, so the body reads
 * `{error: {code, message, details: {producer_failed: true, ...}}}` whatever the executor's own code is. The
 * dispatcher checks this field (`reportsProducerFailure`) to tell a consumer's secondary failure from a root cause.
 */
export const PRODUCER_FAILED_FIELD = 'producer_failed';

/** Whether a thrown value is the sidecar saying the producer of the data failed (realm-safe: by name and code). */
export function isProducerFailure(err: unknown): boolean {
  const e = err as { name?: unknown; code?: unknown };
  return e?.name === 'SidecarError' && e?.code === 'SIDECAR_PRODUCER_FAILED';
}

/** `{producer_failed: true}` when `cause` is a producer failure, else nothing: spread into an error's details. */
export const producerFailureDetails = (cause: unknown): { [PRODUCER_FAILED_FIELD]?: true } =>
  isProducerFailure(cause) ? { [PRODUCER_FAILED_FIELD]: true } : {};

/** Whether an executor's error reply body (`{error: {details}}`) says the request failed because its producer did. */
export function reportsProducerFailure(body: unknown): boolean {
  const details = (body as { error?: { details?: unknown } } | null)?.error?.details;
  return typeof details === 'object' && details !== null && (details as Record<string, unknown>)[PRODUCER_FAILED_FIELD] === true;
}

/**
 * Any thrown value → WireError. Errors with a string `code` and numeric `status` (CornserveError, the model
 * layer's ModelError) keep both; SidecarErrors keep their code (status 502: a downstream failed; a producer failure
 * also gets `producer_failed` in its details); anything else is EXECUTOR_INTERNAL.
 */
export function toWire(err: unknown): WireError {
  const e = err as { code?: unknown; status?: unknown; message?: unknown; details?: unknown; name?: unknown };
  const message = typeof e?.message === 'string' ? e.message : String(err);
  if (isCornserveError(err) || (typeof e?.code === 'string' && typeof e?.status === 'number')) {
    const details = isCornserveError(err) ? err.details : e.details;
    return { code: e.code as string, message, status: e.status as number, ...(details !== undefined ? { details } : {}) };
  }
  if (typeof e?.code === 'string' && e?.name === 'SidecarError') {
    return { code: e.code, message, status: 502, ...(isProducerFailure(err) ? { details: producerFailureDetails(err) } : {}) };
  }
  if (e?.name === 'TimeoutError') return { code: ExecutorErrorCode.DEADLINE_EXCEEDED, message, status: 504 };
  return { code: ExecutorErrorCode.INTERNAL, message, status: 500 };
}

/** WireError → ExecutorError (instanceof CornserveError, so HTTP handlers answer it with its status). */
export function fromWire(w: WireError): ExecutorError {
  return new ExecutorError(w.code, w.message, w.status, w.details);
}
