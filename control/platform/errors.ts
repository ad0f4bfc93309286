/**
 * Platform errors: one class per failure a caller can act on, each with a stable `code` and an HTTP status.
 */
import { CornserveError } from '../../functions/sdk/errors.js';

export type PlatformErrorCode = 'PLATFORM_ENTRY_NOT_FOUND' | 'PLATFORM_DUPLICATE_ID' | 'PLATFORM_SPAWN_FAILED' | 'PLATFORM_SHUT_DOWN';

export class PlatformError extends CornserveError {
  constructor(code: PlatformErrorCode, message: string, status = 500, details?: unknown) {
    super(code, message, status, details);
  }
}

/** The module a launch spec names does not exist under the repository root. */
export class EntryNotFoundError extends PlatformError {
  constructor(readonly entry: string, readonly path: string) {
    super('PLATFORM_ENTRY_NOT_FOUND', `launch entry ${entry} does not exist (looked at ${path})`, 500, { entry, path });
  }
}

/** An executor or app function with this id is already running. */
export class DuplicateIdError extends PlatformError {
  constructor(kind: 'executor' | 'app function', readonly id: string) {
    super('PLATFORM_DUPLICATE_ID', `${kind} ${id} is already running`, 409, { id });
  }
}

/** The operating system refused to start the process. */
export class SpawnFailedError extends PlatformError {
  constructor(readonly id: string, cause: unknown) {
    super('PLATFORM_SPAWN_FAILED', `cannot start ${id}: ${(cause as Error)?.message ?? String(cause)}`, 500, { id });
  }
}

/** shutdown() was called; the platform starts nothing any more. */
export class PlatformShutDownError extends PlatformError {
  constructor() {
    super('PLATFORM_SHUT_DOWN', 'the platform is shut down', 503);
  }
}
