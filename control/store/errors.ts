/**
 * Store errors: one class per failure a caller can act on, each with a stable `code`.
 * Callers branch on `code` (or `instanceof`), never on message text.
 */

export type StoreErrorCode = 'STORE_UNAVAILABLE' | 'STORE_CONFLICT' | 'STORE_NOT_FOUND' | 'STORE_CLOSED';

export class StoreError extends Error {
  override name = 'StoreError';
  constructor(readonly code: StoreErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The backend cannot be reached (Redis down, connection lost, command timed out). Retry later. */
export class StoreUnavailableError extends StoreError {
  override name = 'StoreUnavailableError';
  constructor(detail: string, options?: { cause?: unknown }) {
    super('STORE_UNAVAILABLE', `store unavailable: ${detail}`, options);
  }
}

/** A write would break a uniqueness rule (an app name or alias already used by another app). */
export class StoreConflictError extends StoreError {
  override name = 'StoreConflictError';
  constructor(what: string, readonly conflictsWith: string) {
    super('STORE_CONFLICT', `${what} is already used by ${conflictsWith}`);
  }
}

/** An in-place update (state, usage, outstanding) named a record that does not exist. */
export class StoreNotFoundError extends StoreError {
  override name = 'StoreNotFoundError';
  constructor(readonly kind: 'app' | 'task' | 'executor', readonly id: string) {
    super('STORE_NOT_FOUND', `${kind} ${id} not found`);
  }
}

/** The store was closed; it cannot be used again. */
export class StoreClosedError extends StoreError {
  override name = 'StoreClosedError';
  constructor() {
    super('STORE_CLOSED', 'store is closed');
  }
}
