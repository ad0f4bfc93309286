/**
 * Geri's error catalogue (stable codes, HTTP status). Errors of the layers below keep their own codes:
 * MODEL_* (generation; executors/models/errors.ts), EXECUTOR_* (engine, worker; lib/executor-errors.ts).
 * Request bodies that do not match the schema are INVALID_INPUT (422, naming each field; lib/http.ts).
 */
import { errorCatalogue } from '../../lib/error-catalogue.js';

const catalogue = errorCatalogue({
  /** Nothing arrived under embedding_data_id before the request's deadline (an unknown id, or a producer that never sent). */
  EMBEDDINGS_NOT_RECEIVED: ['GERI_EMBEDDINGS_NOT_RECEIVED', 404],
  /** The producer of the embeddings failed, or the sidecar dropped them (expired, already consumed). */
  EMBEDDINGS_FAILED: ['GERI_EMBEDDINGS_FAILED', 502],
  /** The embeddings' hidden size is not the one the model takes. */
  HIDDEN_SIZE_MISMATCH: ['GERI_HIDDEN_SIZE_MISMATCH', 422],
  /** The embeddings arrived but cannot be used (not a float tensor, inconsistent chunks, skip_tokens leaves no rows). */
  EMBEDDINGS_INVALID: ['GERI_EMBEDDINGS_INVALID', 422],
  /** The route's modality is not the one this Geri serves (POST /audio/generate to an image Geri). */
  WRONG_MODALITY: ['GERI_WRONG_MODALITY', 400],
  /** This Geri has no sidecar (CORNSERVE_SIDECAR_URL unset), or cannot reach it. */
  NO_SIDECAR: ['GERI_NO_SIDECAR', 503],
  /** The x-cornserve-deadline header is not epoch milliseconds. */
  BAD_DEADLINE: ['GERI_BAD_DEADLINE', 400],
});
export const GeriErrorCode = catalogue.codes;
export type GeriErrorCode = (typeof GeriErrorCode)[keyof typeof GeriErrorCode];

export const GeriError = catalogue.errorClass('GeriError');
export type GeriError = InstanceType<typeof GeriError>;

export const geriError = (code: GeriErrorCode, message: string, details?: unknown) => new GeriError(code, message, details);
