/**
 * Geri's error catalogue (stable codes, HTTP status). Errors of the layers below keep their own codes:
 * MODEL_* (generation; executors/models/errors.ts), EXECUTOR_* (engine, worker; lib/executor-errors.ts).
 * Request bodies that do not match the schema are INVALID_INPUT (422, naming each field; lib/http.ts).
 */
import { componentErrors, type CodeOf } from '../../lib/error-catalogue.js';

export const { codes: GeriErrorCode, errorClass: GeriError, error: geriError } = componentErrors('GERI', 'GeriError');
export type GeriErrorCode = CodeOf<typeof GeriErrorCode>;
export type GeriError = InstanceType<typeof GeriError>;
