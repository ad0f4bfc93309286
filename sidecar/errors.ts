/**
 * Sidecar errors: one class, a closed set of stable codes. Errors cross process boundaries
 * (server → client, sidecar → sidecar) as `{code, message}` and are rebuilt with `errorFromWire`,
 * so `instanceof SidecarError` and `err.code` hold on both sides. `instanceof` is realm-safe
 * (a Symbol.for marker): worker threads or a second copy of this module still recognise it.
 */

export const SIDECAR_ERROR_CODES = [
  'SIDECAR_TIMEOUT', // a send (waiting for memory) or a recv (waiting for data) passed its deadline
  'SIDECAR_ABORTED', // the caller's AbortSignal fired
  'SIDECAR_PRODUCER_FAILED', // the producer called fail(), or disconnected with declared chunks unsent
  'SIDECAR_UNAVAILABLE', // the local sidecar (or a peer sidecar) is not reachable / restarted mid-request
  'SIDECAR_NOT_FOUND', // markDone on an id/chunk this sidecar never held
  'SIDECAR_ALREADY_CONSUMED', // recv of a chunk whose memory was already freed (every consumer marked it done)
  'SIDECAR_EXPIRED', // the chunk was not consumed within its expiry and was freed
  'SIDECAR_TOO_LARGE', // the data can never fit in this sidecar's shared memory
  'SIDECAR_BAD_REQUEST', // invalid arguments (ranks, dtype, chunk numbers, ...)
  'SIDECAR_UNKNOWN_RANK', // a rank that no sidecar of the cluster serves
  'SIDECAR_ADDON_MISSING', // the native mmap addon is not built
  'SIDECAR_INTERNAL', // a bug: anything else thrown inside the server
] as const;

export type SidecarErrorCode = (typeof SIDECAR_ERROR_CODES)[number];

const MARK = Symbol.for('cornserve.SidecarError');

export class SidecarError extends Error {
  override readonly name = 'SidecarError';
  constructor(readonly code: SidecarErrorCode, message: string, readonly details?: Record<string, unknown>) {
    super(`${code}: ${message}`);
    (this as unknown as Record<symbol, boolean>)[MARK] = true;
  }

  static override [Symbol.hasInstance](x: unknown): boolean {
    return typeof x === 'object' && x !== null && (x as Record<symbol, unknown>)[MARK] === true;
  }

  /** The message without the code prefix (what goes on the wire). */
  get reason(): string {
    return this.message.slice(this.code.length + 2);
  }
}

export interface WireError {
  code: SidecarErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export function errorToWire(err: unknown): WireError {
  if (err instanceof SidecarError) return { code: err.code, message: err.reason, ...(err.details ? { details: err.details } : {}) };
  return { code: 'SIDECAR_INTERNAL', message: err instanceof Error ? err.message : String(err) };
}

export function errorFromWire(w: WireError): SidecarError {
  const code = (SIDECAR_ERROR_CODES as readonly string[]).includes(w.code) ? w.code : 'SIDECAR_INTERNAL';
  return new SidecarError(code, w.message, w.details);
}

export const badRequest = (message: string, details?: Record<string, unknown>) =>
  new SidecarError('SIDECAR_BAD_REQUEST', message, details);
