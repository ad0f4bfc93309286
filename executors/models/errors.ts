/**
 * Errors of the model layer (loader, catalog, preprocessing, runners). Each has a stable code and the HTTP
 * status an executor should answer with. `isModelError` is realm-safe (worker threads load their own copy).
 */
import { errorCatalogue, type CodeOf } from '../../lib/error-catalogue.js';

const catalogue = errorCatalogue('MODEL');
export const ModelErrorCode = catalogue.codes;
export type ModelErrorCode = CodeOf<typeof ModelErrorCode>;

const MARK = Symbol.for('cornserve.ModelError');

export class ModelError extends Error {
  override readonly name = 'ModelError';
  readonly status: number;
  readonly [MARK] = true;
  constructor(readonly code: ModelErrorCode, message: string, readonly details?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message, options);
    this.status = catalogue.status(code);
  }
}

export function isModelError(e: unknown): e is ModelError {
  return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[MARK] === true;
}

export const modelErrors = {
  notFound: (msg: string, details?: Record<string, unknown>) => new ModelError(ModelErrorCode.NOT_FOUND, msg, details),
  manifestInvalid: (msg: string, details?: Record<string, unknown>) => new ModelError(ModelErrorCode.MANIFEST_INVALID, msg, details),
  manifestMismatch: (msg: string, details?: Record<string, unknown>) => new ModelError(ModelErrorCode.MANIFEST_MISMATCH, msg, details),
  corrupt: (msg: string, cause?: unknown) => new ModelError(ModelErrorCode.INPUT_CORRUPT, msg, undefined, { cause }),
  tooLarge: (msg: string, details?: Record<string, unknown>) => new ModelError(ModelErrorCode.INPUT_TOO_LARGE, msg, details),
  invalid: (msg: string, details?: Record<string, unknown>) => new ModelError(ModelErrorCode.INPUT_INVALID, msg, details),
  unsupported: (msg: string, details?: Record<string, unknown>) => new ModelError(ModelErrorCode.UNSUPPORTED, msg, details),
  runFailed: (msg: string, cause?: unknown) => new ModelError(ModelErrorCode.RUN_FAILED, msg, undefined, { cause }),
};
