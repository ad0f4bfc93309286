/**
 * Eric's error catalogue (stable codes, HTTP status). Errors of the layers below keep their own codes:
 * MODEL_* (decode, size, run; executors/models/errors.ts), EXECUTOR_* (engine, workers;
 * lib/executor-errors.ts), SIDECAR_* (forwarding).
 */
import { errorCatalogue } from '../../lib/error-catalogue.js';

const catalogue = errorCatalogue({
  /** model_id is neither the served model id nor one of its adapters (reference message "Unsupported model ID"). */
  UNSUPPORTED_MODEL_ID: ['ERIC_UNSUPPORTED_MODEL_ID', 400],
  /** The item's modality is not the one this Eric serves (reference message "Unsupported modality"). */
  UNSUPPORTED_MODALITY: ['ERIC_UNSUPPORTED_MODALITY', 400],
  /** Two items of one request share an id. */
  DUPLICATE_ID: ['ERIC_DUPLICATE_ID', 400],
  /** A URL scheme, host or address that is not allowed (file: without --allow-file-urls, a host outside --url-allowlist, a loopback / private / link-local / metadata address outside --allow-private-urls). */
  URL_NOT_ALLOWED: ['ERIC_URL_NOT_ALLOWED', 400],
  /** A URL that is not well formed (bad data: URL, bad base64, several parts for an image). */
  URL_INVALID: ['ERIC_URL_INVALID', 400],
  /** Fetching the URL failed (network error, non-2xx answer, unreadable file). */
  URL_FETCH_FAILED: ['ERIC_URL_FETCH_FAILED', 422],
  /** Fetching the URL took longer than the fetch timeout. */
  URL_TIMEOUT: ['ERIC_URL_TIMEOUT', 422],
  /** The input is larger than --max-input-bytes. */
  INPUT_TOO_LARGE: ['ERIC_INPUT_TOO_LARGE', 413],
  /** Items ask for sidecar forwarding but this Eric has no sidecar (CORNSERVE_SIDECAR_URL unset). */
  NO_SIDECAR: ['ERIC_NO_SIDECAR', 503],
});
export const EricErrorCode = catalogue.codes;
export type EricErrorCode = (typeof EricErrorCode)[keyof typeof EricErrorCode];

export const EricError = catalogue.errorClass('EricError');
export type EricError = InstanceType<typeof EricError>;

export const ericError = (code: EricErrorCode, message: string, details?: unknown) => new EricError(code, message, details);
