/**
 * The platform's request-body limit, in one place. The gateway takes bodies up to `bodyLimitBytes()` (its
 * `--body-limit`, else $CORNSERVE_BODY_LIMIT_BYTES, else 32 MiB) and answers 413 past it. Every hop behind it
 * (app function, dispatcher, executors: echo, Eric, Geri, LLM) takes `hopBodyLimitBytes()`: the same limit read
 * from the same variable, with room for what the platform adds on the way (the `request_data` / CloudEvent /
 * task-graph framing, task configs) and for a graph that hands the request's data to two tasks (an image to the
 * encoder and, inside the chat messages, to the LLM). So the gateway's limit is the smallest along the path:
 * what the gateway accepts, the rest accepts. `cornserve up --body-limit N` puts N in every child's environment.
 */
export const DEFAULT_BODY_LIMIT_BYTES = 32 * 1024 * 1024;
export const BODY_LIMIT_ENV = 'CORNSERVE_BODY_LIMIT_BYTES';

/** Room for the platform's framing on top of twice the public limit. */
const FRAMING_BYTES = 1024 * 1024;

/** The public limit: $CORNSERVE_BODY_LIMIT_BYTES when set (a positive integer), else 32 MiB. */
export function bodyLimitBytes(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[BODY_LIMIT_ENV];
  if (raw === undefined || raw === '') return DEFAULT_BODY_LIMIT_BYTES;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${BODY_LIMIT_ENV} must be a positive number of bytes, got ${JSON.stringify(raw)}`);
  return n;
}

/** What every hop behind the gateway accepts, for a public limit of `publicLimit` bytes. */
export function hopBodyLimitBytes(publicLimit: number = bodyLimitBytes()): number {
  return 2 * publicLimit + FRAMING_BYTES;
}

/** The environment that gives child processes the public limit `bytes`. */
export const bodyLimitEnv = (bytes: number | undefined): Record<string, string> => (bytes ? { [BODY_LIMIT_ENV]: String(bytes) } : {});
