/**
 * Every executor's error codes in one table: code → the HTTP status it is answered with. These codes are part of
 * the wire contract (`{error: {code}}` bodies; OpenAI's `error.code` on the LLM route), so they are declared once,
 * at the bottom layer, and each component takes its section by prefix (`errorCatalogue('ERIC')`,
 * lib/error-catalogue.ts). A code's prefix names the component that answers it; a new code is one line here.
 */
export const ERROR_CODES = {
  // The executor scaffolding: router, engine and workers (lib/executor-errors.ts).
  /** The engine process exited (or never became ready); every pending request fails with this. */
  EXECUTOR_ENGINE_DEAD: 503,
  /** The engine process lives but stopped answering the router's heartbeat; it is killed and pending requests fail. */
  EXECUTOR_ENGINE_HUNG: 503,
  /** The engine did not report ready within the start timeout. */
  EXECUTOR_ENGINE_START_TIMEOUT: 503,
  /** A request passed its deadline while queued or running. */
  EXECUTOR_DEADLINE_EXCEEDED: 504,
  /** The request was cancelled (client went away, router shut down). */
  EXECUTOR_CANCELLED: 503,
  /** A worker thread died or failed to start; the engine is fail-stop after this. */
  EXECUTOR_WORKER_DIED: 503,
  /** A preprocessing thread crashed while handling an item (the item fails, the thread is replaced). */
  EXECUTOR_PREPROCESS_CRASHED: 500,
  /** Too many requests are queued; retry later. */
  EXECUTOR_OVERLOADED: 503,
  /** A message on an internal link did not match the protocol (a bug, or mismatched versions). */
  EXECUTOR_PROTOCOL: 500,
  /** A shared-memory ring or all-reduce was closed or aborted while in use. */
  EXECUTOR_CHANNEL_CLOSED: 503,
  /** Anything else thrown inside an engine or worker. */
  EXECUTOR_INTERNAL: 500,
  /** The x-cornserve-deadline header is not epoch milliseconds (executors/common/deadline.ts). */
  EXECUTOR_BAD_DEADLINE: 400,
  // The model layer: loader, catalog, preprocessing, runners (executors/models/errors.ts).
  /** No model folder serves the model id / modality, or a folder has no manifest. */
  MODEL_NOT_FOUND: 404,
  /** manifest.json is missing a field or has a wrong one; the message names the field. */
  MODEL_MANIFEST_INVALID: 500,
  /** A graph file does not match what the manifest says (missing file, input or output names). */
  MODEL_MANIFEST_MISMATCH: 500,
  /** Input bytes cannot be decoded (corrupt or truncated image / WAV). */
  MODEL_INPUT_CORRUPT: 422,
  /** Input exceeds a limit of the model (pixels, frames, seconds, output size). */
  MODEL_INPUT_TOO_LARGE: 413,
  /** Input decodes but is not acceptable (wrong shape, empty, bad parameter). */
  MODEL_INPUT_INVALID: 400,
  /** The model does not serve this model id or modality. */
  MODEL_UNSUPPORTED: 400,
  /** onnxruntime failed while running a graph. */
  MODEL_RUN_FAILED: 500,
  // Eric, the encoder executor (executors/eric/errors.ts).
  /** model_id is neither the served model id nor one of its adapters (reference message "Unsupported model ID"). */
  ERIC_UNSUPPORTED_MODEL_ID: 400,
  /** The item's modality is not the one this Eric serves (reference message "Unsupported modality"). */
  ERIC_UNSUPPORTED_MODALITY: 400,
  /** Two items of one request share an id. */
  ERIC_DUPLICATE_ID: 400,
  /** A URL scheme, host or address that is not allowed (file: without --allow-file-urls, a host outside --url-allowlist, a loopback / private / link-local / metadata address outside --allow-private-urls). */
  ERIC_URL_NOT_ALLOWED: 400,
  /** A URL that is not well formed (bad data: URL, bad base64, several parts for an image). */
  ERIC_URL_INVALID: 400,
  /** Fetching the URL failed (network error, non-2xx answer, unreadable file). */
  ERIC_URL_FETCH_FAILED: 422,
  /** Fetching the URL took longer than the fetch timeout. */
  ERIC_URL_TIMEOUT: 422,
  /** The input is larger than --max-input-bytes. */
  ERIC_INPUT_TOO_LARGE: 413,
  /** Items ask for sidecar forwarding but this Eric has no sidecar (CORNSERVE_SIDECAR_URL unset). */
  ERIC_NO_SIDECAR: 503,
  // Geri, the generator executor (executors/geri/errors.ts).
  /** Nothing arrived under embedding_data_id before the request's deadline (an unknown id, or a producer that never sent). */
  GERI_EMBEDDINGS_NOT_RECEIVED: 404,
  /** The producer of the embeddings failed, or the sidecar dropped them (expired, already consumed). */
  GERI_EMBEDDINGS_FAILED: 502,
  /** The embeddings' hidden size is not the one the model takes. */
  GERI_HIDDEN_SIZE_MISMATCH: 422,
  /** The embeddings arrived but cannot be used (not a float tensor, inconsistent chunks, skip_tokens leaves no rows). */
  GERI_EMBEDDINGS_INVALID: 422,
  /** The route's modality is not the one this Geri serves (POST /audio/generate to an image Geri). */
  GERI_WRONG_MODALITY: 400,
  /** This Geri has no sidecar (CORNSERVE_SIDECAR_URL unset), or cannot reach it. */
  GERI_NO_SIDECAR: 503,
  /** The x-cornserve-deadline header is not epoch milliseconds. */
  GERI_BAD_DEADLINE: 400,
  // The LLM executor (executors/llm/errors.ts); answered in OpenAI's error shape.
  /** The request does not match the chat-completions schema or asks for something unsupported (n > 1, ...). */
  LLM_BAD_REQUEST: 400,
  /** prompt + max tokens do not fit the model's context. */
  LLM_CONTEXT_TOO_LONG: 400,
  /** A multimodal part this executor cannot use: a plain URL (no encoder inside), or an unserved modality. */
  LLM_MULTIMODAL_UNSUPPORTED: 400,
  /** Embeddings received from the sidecar do not fit the model (wrong hidden size, not a float tensor). */
  LLM_EMBEDDING_MISMATCH: 400,
  /** `model` names a model this executor does not serve. */
  LLM_MODEL_NOT_FOUND: 404,
  /** The waiting queue is full. */
  LLM_OVERLOADED: 503,
  /** The request's deadline passed before it finished. */
  LLM_DEADLINE_EXCEEDED: 504,
  /** Receiving embeddings from / sending hidden states to the sidecar failed. */
  LLM_SIDECAR_FAILED: 502,
  /** The model folder (manifest, graphs, tokenizer) is not a usable LLM. */
  LLM_MODEL_INVALID: 500,
  /** The request was cancelled (client went away, server stopping). */
  LLM_CANCELLED: 503,
  /** onnxruntime failed while running a step. */
  LLM_RUN_FAILED: 500,
} as const satisfies Record<string, number>;

export type ErrorCodeTable = typeof ERROR_CODES;
/** The components' prefixes: the part of a code before its first underscore. */
export const ERROR_CODE_PREFIXES = ['EXECUTOR', 'MODEL', 'ERIC', 'GERI', 'LLM'] as const;
export type ErrorCodePrefix = (typeof ERROR_CODE_PREFIXES)[number];
