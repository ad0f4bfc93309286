/**
 * Errors of the LLM executor. Each has a stable code and an HTTP status; the server answers them in OpenAI's
 * error shape `{error: {message, type, param, code}}` (see `toOpenAIError`), which also carries our code.
 */
import type { ErrorRequestHandler, Response } from 'express';
import { CornserveError, isCornserveError } from '../../functions/sdk/errors.js';
import type { Logger } from '../../lib/log.js';
import { DEADLINE_HEADER } from '../../functions/sdk/dispatch.js';
import { producerFailureDetails } from '../../lib/executor-errors.js';
import { isModelError } from '../models/errors.js';
import { errorCatalogue, type CodeOf } from '../../lib/error-catalogue.js';

const catalogue = errorCatalogue('LLM');
export const LlmErrorCode = catalogue.codes;
export type LlmErrorCode = CodeOf<typeof LlmErrorCode>;

export class LlmError extends CornserveError {
  constructor(code: LlmErrorCode, message: string, readonly param: string | null = null, details?: unknown) {
    super(code, message, catalogue.status(code), details);
  }
}

export const llmErrors = {
  badRequest: (msg: string, param: string | null = null) => new LlmError(LlmErrorCode.BAD_REQUEST, msg, param),
  /** A malformed x-cornserve-deadline header (executors/common/deadline.ts). */
  badDeadline: (msg: string) => new LlmError(LlmErrorCode.BAD_REQUEST, msg, DEADLINE_HEADER),
  contextTooLong: (msg: string) => new LlmError(LlmErrorCode.CONTEXT_TOO_LONG, msg, 'messages'),
  multimodalUnsupported: (msg: string, param: string) => new LlmError(LlmErrorCode.MULTIMODAL_UNSUPPORTED, msg, param),
  embeddingMismatch: (msg: string, param: string) => new LlmError(LlmErrorCode.EMBEDDING_MISMATCH, msg, param),
  modelNotFound: (msg: string) => new LlmError(LlmErrorCode.MODEL_NOT_FOUND, msg, 'model'),
  overloaded: (msg: string) => new LlmError(LlmErrorCode.OVERLOADED, msg),
  deadline: (msg: string) => new LlmError(LlmErrorCode.DEADLINE_EXCEEDED, msg),
  sidecar: (msg: string, cause?: unknown) =>
    new LlmError(LlmErrorCode.SIDECAR_FAILED, msg, null, cause instanceof Error ? { cause: cause.message, ...producerFailureDetails(cause) } : undefined),
  modelInvalid: (msg: string) => new LlmError(LlmErrorCode.MODEL_INVALID, msg),
  cancelled: (msg: string) => new LlmError(LlmErrorCode.CANCELLED, msg),
  runFailed: (msg: string) => new LlmError(LlmErrorCode.RUN_FAILED, msg),
};

/**
 * OpenAI's error object. `type` follows OpenAI's vocabulary; `code` is our stable code; `details` (our extension,
 * present when the error has any) carries e.g. `producer_failed` (lib/executor-errors.ts) for the dispatcher.
 */
export interface OpenAIErrorBody {
  error: { message: string; type: string; param: string | null; code: string; details?: unknown };
}

const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error', 404: 'not_found_error', 413: 'invalid_request_error', 422: 'invalid_request_error',
  502: 'server_error', 503: 'server_error', 504: 'timeout_error',
};

/** Any thrown value → status + OpenAI error body. */
export function toOpenAIError(err: unknown): { status: number; body: OpenAIErrorBody } {
  const e = err as { type?: string; status?: number; message?: string; code?: unknown; name?: string };
  let status = 500;
  let code = 'LLM_INTERNAL';
  let param: string | null = null;
  let details: unknown;
  if (isCornserveError(err)) {
    status = err.status;
    code = err.code;
    param = (err as Partial<LlmError>).param ?? null;
    details = err.details;
  } else if (isModelError(err)) {
    // the in-process encoders' input errors (MODEL_INPUT_CORRUPT 422, MODEL_INPUT_TOO_LARGE 413, ...)
    status = err.status;
    code = err.code;
    param = 'messages';
    details = err.details;
  } else if (e?.type === 'entity.parse.failed') {
    status = 400;
    code = LlmErrorCode.BAD_REQUEST;
  } else if (e?.type === 'entity.too.large') {
    status = 413;
    code = 'LLM_PAYLOAD_TOO_LARGE';
  }
  const message = e?.message ?? String(err);
  return { status, body: { error: { message, type: TYPE_BY_STATUS[status] ?? 'server_error', param, code, ...(details !== undefined ? { details } : {}) } } };
}

/** The LLM executors' last express handler: any error thrown outside a route's own catch, in OpenAI's shape. */
/**
 * Answers a chat request that failed: OpenAI's error shape with its status, or (the stream already started) the
 * end of the response. Logs server-side failures. Returns the error code (the request's outcome label).
 */
export function replyWithError(res: Response, e: unknown, log: Logger): string {
  const { status, body } = toOpenAIError(e);
  if (status === 500) log.error({ err: e }, body.error.message);
  else if (status > 500) log.warn({ code: body.error.code }, body.error.message);
  if (!res.headersSent) res.status(status).json(body);
  else res.end();
  return body.error.code;
}

/** What one chat request is counted by: its outcome (ok, cancelled, an error code) and its duration. */
export interface ChatAccounting {
  requests: { inc(labels: { outcome: string }): void };
  duration: { observe(seconds: number): void };
}

/**
 * One chat request's life on either LLM server: cancelled when the client leaves, an error answered in OpenAI's
 * shape, `settle` told the outcome, then counted once by outcome and duration. `answer` returns its outcome when it
 * is not 'ok' (a stream that ended in an error it already sent).
 */
export async function answerChat(
  res: Response,
  o: { metrics: ChatAccounting; log: Logger; settle?: (outcome: string) => Promise<void> | void },
  answer: (signal: AbortSignal, t0: number) => Promise<string | void>,
): Promise<void> {
  const t0 = performance.now();
  const cancel = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) cancel.abort();
  });
  let outcome = 'ok';
  try {
    outcome = (await answer(cancel.signal, t0)) ?? 'ok';
  } catch (e) {
    outcome = cancel.signal.aborted ? 'cancelled' : replyWithError(res, e, o.log);
  } finally {
    if (cancel.signal.aborted) outcome = 'cancelled';
    await o.settle?.(outcome);
    o.metrics.requests.inc({ outcome });
    o.metrics.duration.observe((performance.now() - t0) / 1000);
  }
}

export function openAIErrorHandler(log: Logger): ErrorRequestHandler {
  return (err, _req, res, _next) => {
    const { status, body } = toOpenAIError(err);
    if (status >= 500) log.error({ err }, body.error.message);
    if (res.headersSent) return void res.end();
    res.status(status).json(body);
  };
}
