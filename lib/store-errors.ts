/**
 * Store errors: one class per failure a caller can act on, each with a stable `code` and the HTTP status a route
 * that met it answers with (they are CornserveErrors, so every server's error reply maps them the same way).
 * Callers branch on `code` (or `instanceof`), never on message text.
 */
import { CornserveError } from '../functions/sdk/errors.js';

export type StoreErrorCode = 'STORE_UNAVAILABLE' | 'STORE_CONFLICT' | 'STORE_NOT_FOUND' | 'STORE_CLOSED';

const STATUS: Record<StoreErrorCode, number> = { STORE_UNAVAILABLE: 503, STORE_CONFLICT: 409, STORE_NOT_FOUND: 404, STORE_CLOSED: 503 };

/** Seconds a client is told to wait (Retry-After) when the store cannot be reached: Redis reconnects within about a second. */
export const STORE_RETRY_AFTER_S = 2;

export class StoreError extends CornserveError {
  declare readonly code: StoreErrorCode;
  constructor(code: StoreErrorCode, message: string, options?: { cause?: unknown; details?: unknown }) {
    super(code, message, STATUS[code], options?.details);
    if (options && 'cause' in options) this.cause = options.cause;
  }
}

/**
 * The backend cannot be reached (Redis down, connection lost, command timed out). Retry later. The message is the
 * platform's own (what was being done); the client library's text stays in `cause`, for logs.
 */
export class StoreUnavailableError extends StoreError {
  constructor(what: string, options?: { cause?: unknown }) {
    super('STORE_UNAVAILABLE', `the store cannot be reached (${what}); retry in ${STORE_RETRY_AFTER_S} s`, { ...options, details: { retryAfterS: STORE_RETRY_AFTER_S } });
  }
}

/** A write would break a uniqueness rule (an app name or alias already used by another app). */
export class StoreConflictError extends StoreError {
  constructor(what: string, readonly conflictsWith: string) {
    super('STORE_CONFLICT', `${what} is already used by ${conflictsWith}`);
  }
}

/** An in-place update (state, usage, outstanding) named a record that does not exist. */
export class StoreNotFoundError extends StoreError {
  constructor(readonly kind: 'app' | 'task' | 'executor', readonly id: string) {
    super('STORE_NOT_FOUND', `${kind} ${id} not found`);
  }
}

/** The store was closed; it cannot be used again. */
export class StoreClosedError extends StoreError {
  constructor() {
    super('STORE_CLOSED', 'store is closed');
  }
}
