/**
 * The app-function runtime's error catalogue (stable codes; HTTP status where one applies).
 * Errors reach the gateway as `{error: {code, message, details?}}`.
 */
import { CornserveError } from '../sdk/errors.js';

/** The app source cannot be turned into an app: syntax errors, bad imports, a throwing module, an invalid defineApp. */
export class AppSourceError extends CornserveError {
  constructor(readonly problems: string[]) {
    super('APP_SOURCE_INVALID', `App source code validation failed: ${problems.join('; ')}`, 400, problems);
  }
}

/** serve() threw something that is not a Cornserve error (a bug or a deliberate throw in the app). */
export class AppServeError extends CornserveError {
  constructor(appName: string, cause: unknown) {
    super('APP_ERROR', `serve() of app ${appName} failed: ${cause instanceof Error ? cause.message : String(cause)}`, 500);
  }
}

/** serve() returned (or streamed) a value that does not match the app's response schema. */
export class ResponseSchemaError extends CornserveError {
  constructor(appName: string, details: unknown, what = 'response') {
    super('APP_RESPONSE_INVALID', `app ${appName} produced a ${what} that does not match its response schema`, 500, details);
  }
}

/** The request's deadline passed before serve() finished. */
export class DeadlineExceededError extends CornserveError {
  constructor(what: string) {
    super('DEADLINE_EXCEEDED', `${what} did not finish before the request deadline`, 504);
  }
}

/** The invoke body is not `{request_data: ...}`, is not JSON, or is too large. */
export class BadInvokeBodyError extends CornserveError {
  constructor(message: string, status = 400, code = 'BAD_REQUEST') {
    super(code, message, status);
  }
}
