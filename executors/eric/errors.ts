/**
 * Eric's error catalogue (stable codes, HTTP status). Errors of the layers below keep their own codes:
 * MODEL_* (decode, size, run; executors/models/errors.ts), EXECUTOR_* (engine, workers;
 * lib/executor-errors.ts), SIDECAR_* (forwarding).
 */
import { componentErrors, type CodeOf } from '../../lib/error-catalogue.js';

export const { codes: EricErrorCode, errorClass: EricError, error: ericError } = componentErrors('ERIC', 'EricError');
export type EricErrorCode = CodeOf<typeof EricErrorCode>;
export type EricError = InstanceType<typeof EricError>;
