/**
 * The gateway's error catalogue: one class per failure a client can act on, each with a stable code and
 * the HTTP status of docs/architecture.md §4. Bodies are `{error: {code, message, details?}}` (lib/http.ts).
 */
import { CornserveError } from '../../functions/sdk/errors.js';
import { redactInternal } from '../../lib/redact.js';

/** Missing or wrong `Authorization: Bearer <admin token>` on a mutating route. 401. */
export class UnauthorizedError extends CornserveError {
  constructor(reason: string) {
    super('UNAUTHORIZED', `${reason}: send Authorization: Bearer $CORNSERVE_ADMIN_TOKEN`, 401);
  }
}

/** No app with that id, name or alias. 404. */
export class AppNotFoundError extends CornserveError {
  constructor(idOrName: string) {
    super('APP_NOT_FOUND', `app ${idOrName} is not registered`, 404);
  }
}

/** The app is still being registered (its tasks or its function are not up yet). 409. */
export class AppNotReadyError extends CornserveError {
  constructor(name: string) {
    super('APP_NOT_READY', `app ${name} is not ready yet; wait for its registration to finish`, 409);
  }
}

/** The app function is down (restarting after a crash) and did not come back in time. 503. */
export class AppFunctionUnavailableError extends CornserveError {
  constructor(name: string, why: string) {
    super('APP_FUNCTION_UNAVAILABLE', `the app function of ${name} is unavailable (${why}); retry shortly`, 503);
  }
}

/** The app function died or dropped the connection while handling the request. 502. */
export class AppFunctionFailedError extends CornserveError {
  constructor(name: string, crashed: boolean, detail: string) {
    super(
      crashed ? 'APP_FUNCTION_CRASHED' : 'APP_FUNCTION_UNREACHABLE',
      crashed
        ? `the app function of ${name} crashed while handling this request (${redactInternal(detail)}); it is being restarted`
        : `the app function of ${name} dropped this request (${redactInternal(detail)})`,
      502,
    );
  }
}

/** The app function's event loop was blocked past the limit (an endless loop in serve()): it was killed and is being restarted. 502. */
export class AppFunctionBlockedError extends CornserveError {
  constructor(name: string, blockedMs: number, limitMs: number) {
    super(
      'APP_FUNCTION_BLOCKED',
      `the app function of ${name} was killed while handling this request: its event loop was blocked for ${blockedMs} ms (limit ${limitMs} ms; does serve() loop without awaiting?); it is being restarted`,
      502,
    );
  }
}

/** The app is being unregistered: it takes no new requests (or its drain grace passed before this one finished). 503. */
export class AppUnregisteringError extends CornserveError {
  constructor(name: string, cutAfterMs?: number) {
    super(
      'APP_UNREGISTERING',
      cutAfterMs === undefined
        ? `app ${name} is being unregistered and takes no new requests`
        : `app ${name} was unregistered before this request finished (its in-flight requests had ${cutAfterMs} ms to finish)`,
      503,
    );
  }
}

/** The gateway is shutting down: it takes no new requests (or its drain grace passed before this one finished). 503. */
export class ShuttingDownError extends CornserveError {
  constructor(cutAfterMs?: number) {
    super(
      'SHUTTING_DOWN',
      cutAfterMs === undefined
        ? 'cornserve is shutting down and takes no new requests'
        : `cornserve shut down before this request finished (in-flight requests had ${cutAfterMs} ms to finish)`,
      503,
    );
  }
}

/**
 * A node's sidecar died while this request was in flight: the tensors it was moving there are lost, so it is answered
 * at once instead of at its deadline. 503 (retry once the supervisor has restarted the sidecar: GET /health).
 */
export class SidecarDownError extends CornserveError {
  constructor(node: string, reason: string) {
    super('SIDECAR_DOWN', `the sidecar of node ${node} went down while this request was in flight (${reason}); it is being restarted: retry shortly`, 503, { node });
  }
}

/** The gateway gave up waiting for an answer past the request deadline. 504. */
export class GatewayDeadlineError extends CornserveError {
  constructor(what: string) {
    super('DEADLINE_EXCEEDED', `${what} did not answer before the request deadline`, 504);
  }
}

/**
 * A registration failed; the message names the problem. Up-front failures (bad source 400, bad name 400, name
 * taken 409) are the HTTP reply of POST /app/register; later ones (deployment) its SSE `error` event.
 */
export class RegistrationError extends CornserveError {
  constructor(message: string, details?: unknown, status = 400) {
    super('REGISTRATION_FAILED', message, status, details);
  }
}

/** A bad parameter outside the JSON body (deadline header, timeout_ms, scale amount). 400. */
export class BadRequestError extends CornserveError {
  constructor(message: string) {
    super('BAD_REQUEST', message, 400);
  }
}

/** A request body that is not JSON (text/plain, a form, ...): every body the gateway takes is JSON. 415. */
export class UnsupportedMediaTypeError extends CornserveError {
  constructor(contentType: string) {
    super('UNSUPPORTED_MEDIA_TYPE', `the request body must be JSON: send content-type: application/json (got ${JSON.stringify(contentType.slice(0, 100))})`, 415);
  }
}

/** The dispatcher cannot be reached for POST /tasks/invoke. 503. */
export class DispatcherUnavailableError extends CornserveError {
  constructor(detail: string) {
    super('DISPATCHER_UNAVAILABLE', `the dispatcher cannot be reached: ${redactInternal(detail)}`, 503);
  }
}
