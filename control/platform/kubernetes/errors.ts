/**
 * Kubernetes platform errors: one class per failure a caller can act on, each with a stable `code` and an
 * HTTP status (the gateway turns them into `{error: {code, message, details}}`).
 */
import { CornserveError } from '../../../functions/sdk/errors.js';

export type KubePlatformErrorCode =
  | 'KUBE_INVALID_SPEC'
  | 'KUBE_API_ERROR'
  | 'KUBE_NOT_READY'
  | 'KUBE_DEPLOY_FAILED'
  | 'KUBE_SHUT_DOWN';

export class KubePlatformError extends CornserveError {
  constructor(code: KubePlatformErrorCode, message: string, status = 500, details?: unknown) {
    super(code, message, status, details);
  }
}

/** A spec the platform cannot turn into objects (devices on another node, no node). */
export class InvalidSpecError extends KubePlatformError {
  constructor(message: string) {
    super('KUBE_INVALID_SPEC', message, 400);
  }
}

/** The API server refused a request or could not be reached. `status` is the API's HTTP code (0 = no answer). */
export class KubeApiError extends KubePlatformError {
  constructor(readonly verb: string, readonly what: string, readonly apiStatus: number, reason: string) {
    super('KUBE_API_ERROR', `kubernetes ${verb} ${what} failed (${apiStatus || 'no response'}): ${reason}`, 502, { verb, what, apiStatus, reason });
  }
}

/** An object did not become ready within its bound. */
export class NotReadyError extends KubePlatformError {
  constructor(readonly what: string, readonly ms: number, detail?: string) {
    super('KUBE_NOT_READY', `${what} was not ready within ${ms} ms${detail ? `: ${detail}` : ''}`, 504, { what, ms });
  }
}

/** Kubernetes or Knative reported that an object cannot become ready (Ready=False, progress deadline exceeded). */
export class DeployFailedError extends KubePlatformError {
  constructor(readonly what: string, reason: string) {
    super('KUBE_DEPLOY_FAILED', `${what} failed: ${reason}`, 502, { what, reason });
  }
}

/** shutdown() was called; the platform starts nothing any more. */
export class KubeShutDownError extends KubePlatformError {
  constructor() {
    super('KUBE_SHUT_DOWN', 'the kubernetes platform is shut down', 503);
  }
}
