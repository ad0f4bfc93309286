/**
 * Errors of the model layer (loader, catalog, preprocessing, runners). Each has a stable code and the HTTP
 * status an executor should answer with. `isModelError` is realm-safe (worker threads load their own copy).
 */
import { errorCatalogue } from '../../lib/error-catalogue.js';

const catalogue = errorCatalogue({
  /** No model folder serves the model id / modality, or a folder has no manifest. */
  NOT_FOUND: ['MODEL_NOT_FOUND', 404],
  /** manifest.json is missing a field or has a wrong one; the message names the field. */
  MANIFEST_INVALID: ['MODEL_MANIFEST_INVALID', 500],
  /** A graph file does not match what the manifest says (missing file, input or output names). */
  MANIFEST_MISMATCH: ['MODEL_MANIFEST_MISMATCH', 500],
  /** Input bytes cannot be decoded (corrupt or truncated image / WAV). */
  INPUT_CORRUPT: ['MODEL_INPUT_CORRUPT', 422],
  /** Input exceeds a limit of the model (pixels, frames, seconds, output size). */
  INPUT_TOO_LARGE: ['MODEL_INPUT_TOO_LARGE', 413],
  /** Input decodes but is not acceptable (wrong shape, empty, bad parameter). */
  INPUT_INVALID: ['MODEL_INPUT_INVALID', 400],
  /** The model does not serve this model id or modality. */
  UNSUPPORTED: ['MODEL_UNSUPPORTED', 400],
  /** onnxruntime failed while running a graph. */
  RUN_FAILED: ['MODEL_RUN_FAILED', 500],
});
export const ModelErrorCode = catalogue.codes;
export type ModelErrorCode = (typeof ModelErrorCode)[keyof typeof ModelErrorCode];

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
