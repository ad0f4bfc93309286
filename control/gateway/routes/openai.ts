/**
 * The OpenAI-compatible routes (docs/architecture.md §4): `POST /v1/chat/completions`, `GET /v1/models[/:model]`.
 *
 *  - `model` names an app (its name or alias); the whole body is that app's request_data, sent to the
 *    app function's /invoke like POST /app/invoke does.
 *  - The app's NDJSON chunks become OpenAI SSE (`data: {chunk}` per chunk, then `data: [DONE]`); with
 *    `stream` false/absent they are aggregated into one `chat.completion` (content, finish_reason, usage).
 *    A chunk that is not a chat chunk (e.g. arena's `{model_name: delta}`) is streamed as is; aggregated,
 *    such chunks are merged key by key and returned as the message content (JSON text).
 *  - Errors are OpenAI's shape `{error: {message, type, param, code}}`: unknown model 404 `model_not_found`,
 *    a request the app rejects 400 `invalid_request_error` (param = the first bad field), 5xx `server_error`.
 *    An error after the stream started is sent as one `data: {"error": ...}` event, and the stream ends.
 *  - Which apps are chat apps: an app whose minimal request example (derived from its request schema by the
 *    registration check, AppEntry.requestExample) is itself a chat request (`model` + `messages`). Only those
 *    are listed by GET /v1/models; /v1/chat/completions forwards to any app and lets it validate.
 */
import type { Agent } from 'node:http';
import { Router, type ErrorRequestHandler, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { ndjsonLines } from '../../../functions/sdk/index.js';
import { logErrorReply, toErrorBody } from '../../../lib/http.js';
import { redactInternal } from '../../../lib/redact.js';
import type { Logger } from '../../../lib/log.js';
import type { AppFunctions } from '../app-functions.js';
import type { AppEntry, AppManager } from '../app-manager.js';
import { requestDeadline } from '../deadline.js';
import { AppNotReadyError, GatewayDeadlineError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { openUpstream, type UpstreamReply } from '../proxy.js';
import type { FunctionLinks } from '../function-link.js';

export interface OpenAIRoutesDeps {
  apps: AppManager;
  functions: AppFunctions;
  metrics: GatewayMetrics;
  agent: Agent;
  /** The framed links to the app functions (routes/apps.ts). */
  links?: FunctionLinks;
  json: RequestHandler;
  log: Logger;
  /** How long a request waits for a restarting app function. @default 30 s */
  restartWaitMs?: number;
}

/** OpenAI's error body. */
export interface OpenAIError {
  error: { message: string; type: string; param: string | null; code: string | null };
}

const minimalChat = z.object({
  model: z.string().min(1),
  messages: z.array(z.object({ role: z.string(), content: z.unknown() })).min(1),
});

/** A chat app: its minimal request example is a chat request. */
const isChatApp = (entry: Pick<AppEntry, 'requestExample'>): boolean => minimalChat.safeParse(entry.requestExample).success;

type Chunk = Record<string, unknown>;
interface ChatChunkChoice {
  index: number;
  delta?: { role?: string; content?: string | null; audio?: { data?: string } };
  finish_reason?: string | null;
}

export function openaiRoutes(deps: OpenAIRoutesDeps): Router {
  const { apps, functions, metrics } = deps;
  const r = Router();
  const created = new Map<string, number>();
  const model = (e: AppEntry) => {
    if (!created.has(e.appId)) created.set(e.appId, Math.floor(Date.now() / 1000));
    return { id: e.name, object: 'model' as const, created: created.get(e.appId)!, owned_by: 'cornserve' };
  };

  r.get('/v1/models', (_req, res) => {
    res.json({ object: 'list', data: apps.entries().filter((e) => e.state === 'ready' && isChatApp(e)).map(model) });
  });

  r.get('/v1/models/:model', (req, res) => {
    res.json(model(resolveModel(apps, String(req.params.model))));
  });

  r.post('/v1/chat/completions', deps.json, async (req, res) => {
    const body = req.body as unknown;
    const parsed = minimalChat.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new OpenAIRequestError(400, `${issue.path.join('.') || 'body'}: ${issue.message}`, issue.path.map(String).join('.') || null);
    }
    const entry = resolveModel(apps, parsed.data.model);
    if (entry.state !== 'ready' && functions.state(entry.appId) === undefined) throw new AppNotReadyError(entry.name);
    const stream = (body as { stream?: unknown }).stream === true;
    const deadline = requestDeadline(req);
    const ticket = apps.admit(entry); // 503 while the app is unregistered or the gateway stops; drains wait for it
    res.on('close', ticket.end);
    const done = metrics.invocationStarted(entry.name, entry.appId);
    res.on('close', () => done(res.statusCode));
    const target = await functions.waitReady(entry.appId, Math.min(deadline, Date.now() + (deps.restartWaitMs ?? 30_000)));
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    ticket.signal.addEventListener('abort', () => abort.abort(ticket.signal.reason), { once: true }); // a drain's cut
    let up: UpstreamReply;
    try {
      const link = deps.links ? await deps.links.get(target.url) : undefined;
      // Aggregated replies report usage, so the LLM is asked for it.
      const requestData = stream ? body : { ...(body as object), stream_options: { include_usage: true } };
      up = await openUpstream({
        link, url: `${target.url}/invoke`, body: JSON.stringify({ request_data: requestData }), agent: deps.agent, deadline, signal: abort.signal, what: 'the app function',
        ...(typeof req.headers.traceparent === 'string' ? { traceparent: req.headers.traceparent } : {}),
      });
    } catch (e) {
      if (ticket.signal.aborted) throw ticket.signal.reason;
      if (abort.signal.aborted) return;
      if (e instanceof GatewayDeadlineError) throw e;
      throw await functions.failure(entry.appId, target.generation, e as Error);
    }
    const status = up.statusCode ?? 502;
    if (status >= 400) throw new UpstreamError(status, await readAll(up), up.headers['retry-after']);
    const chunks = String(up.headers['content-type'] ?? '').includes('ndjson') ? chunksOf(up) : jsonValue(up);
    if (stream) await streamSse(res, chunks, (err) => metrics.errors.inc({ code: err.error.code ?? 'unknown' }));
    else res.json(await aggregate(chunks, parsed.data.model));
  });

  r.use('/v1', (req, _res, next) => next(new OpenAIRequestError(404, `route ${req.method} /v1${req.path} not found`, null, 'not_found')));

  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    const { status, body } = toOpenAIError(err);
    metrics.errors.inc({ code: body.error.code ?? body.error.type });
    // An app function's error reply was logged by the app function: logged once, there.
    if (!(err instanceof UpstreamError)) logErrorReply(deps.log, req.path, status, body.error.code ?? undefined, body.error.message, err);
    if (res.headersSent) return void res.end();
    if (err instanceof UpstreamError && err.retryAfter) res.set('retry-after', err.retryAfter);
    res.status(status).json(body);
  };
  r.use('/v1', onError);
  return r;
}

function resolveModel(apps: AppManager, name: string): AppEntry {
  try {
    return apps.resolve(name);
  } catch {
    throw new OpenAIRequestError(404, `The model \`${name}\` does not exist: no app or alias of that name is registered`, 'model', 'model_not_found');
  }
}

/** An error already in OpenAI's terms. */
class OpenAIRequestError extends Error {
  constructor(readonly status: number, message: string, readonly param: string | null, readonly code: string | null = 'invalid_request') {
    super(message);
  }
}

/** The app function's error reply (Cornserve's `{error: {code, message, details?}}`). */
class UpstreamError extends Error {
  /** `retryAfter`: the app function's Retry-After header (NO_EXECUTOR), passed on to the client. */
  constructor(readonly status: number, readonly body: string, readonly retryAfter?: string) {
    super(`app function answered ${status}`);
  }
}

const typeFor = (status: number) =>
  status === 401 || status === 403 ? 'authentication_error' : status === 429 ? 'rate_limit_error' : status >= 500 ? 'server_error' : 'invalid_request_error';

/** Any thrown value (ours, the app function's, a body-parser's) in OpenAI's error shape. */
export function toOpenAIError(err: unknown): { status: number; body: OpenAIError } {
  if (err instanceof OpenAIRequestError) return { status: err.status, body: { error: { message: err.message, type: typeFor(err.status), param: err.param, code: err.code } } };
  let status: number;
  let cs: { code: string; message: string; details?: unknown };
  if (err instanceof UpstreamError) {
    status = err.status;
    try {
      cs = (JSON.parse(err.body) as { error: typeof cs }).error;
    } catch {
      cs = { code: 'UPSTREAM_ERROR', message: err.body.slice(0, 500) || err.message };
    }
  } else {
    ({ status, body: { error: cs } } = toErrorBody(err));
  }
  // Our 422 (a field failed validation) is OpenAI's 400.
  if (status === 422) status = 400;
  const issues = Array.isArray(cs.details) ? (cs.details as Array<{ path?: unknown }>) : [];
  const param = typeof issues[0]?.path === 'string' && issues[0].path !== '(root)' ? issues[0].path : null;
  // The whole body is the app's request_data here: field paths are OpenAI's own (max_tokens, not request_data: max_tokens).
  const message = cs.message.replace(/^request_data: /, '');
  return { status, body: { error: { message: redactInternal(message), type: typeFor(status), param, code: cs.code.toLowerCase() } } };
}

async function readAll(up: UpstreamReply): Promise<string> {
  const parts: Buffer[] = [];
  for await (const p of up as AsyncIterable<Buffer>) parts.push(p);
  return Buffer.concat(parts).toString('utf8');
}

/** The app function's NDJSON chunks; its final `{"error": ...}` line is thrown as that error. */
async function* chunksOf(up: UpstreamReply): AsyncGenerator<Chunk> {
  const parse = (line: string): Chunk => {
    const value = JSON.parse(line) as Chunk;
    if (Object.keys(value).length === 1 && typeof value.error === 'object' && value.error !== null && 'code' in value.error)
      throw new UpstreamError(502, line);
    return value;
  };
  const cut = () => new UpstreamError(502, JSON.stringify({ error: { code: 'STREAM_CUT', message: 'the app function closed the stream mid-reply' } }));
  let ended = false;
  async function* body(): AsyncGenerator<Buffer> {
    yield* up as AsyncIterable<Buffer>;
    ended = true;
  }
  // A line seen after the body ended is its unterminated tail: only a complete reply may end without a newline.
  for await (const line of ndjsonLines(body())) {
    if (ended && !up.complete) throw cut();
    yield parse(line);
  }
  if (!up.complete) throw cut();
}

/** A non-streaming app's JSON value, as a one-chunk stream. */
async function* jsonValue(up: UpstreamReply): AsyncGenerator<Chunk> {
  yield JSON.parse(await readAll(up)) as Chunk;
}

async function streamSse(res: Response, chunks: AsyncGenerator<Chunk>, onError: (e: OpenAIError) => void): Promise<void> {
  let started = false;
  try {
    for await (const chunk of chunks) {
      if (res.destroyed) return void (await chunks.return(undefined));
      if (!started) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
        started = true;
      }
      if (!res.write(`data: ${JSON.stringify(chunk)}\n\n`)) await new Promise((ok) => res.once('drain', ok).once('close', ok));
    }
  } catch (e) {
    if (!started) throw e;
    const { body } = toOpenAIError(e);
    onError(body);
    res.end(`data: ${JSON.stringify(body)}\n\n`);
    return;
  }
  if (!started) res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.end('data: [DONE]\n\n');
}

const isChatChunk = (c: Chunk): c is Chunk & { choices: ChatChunkChoice[] } => c.object === 'chat.completion.chunk' && Array.isArray(c.choices);

/** Chunks -> one `chat.completion` (OpenAI's non-streaming reply). */
async function aggregate(chunks: AsyncIterable<Chunk>, requestedModel: string): Promise<Record<string, unknown>> {
  let head: Chunk | undefined;
  let usage: unknown = null;
  const choices = new Map<number, { content: string; finish: string | null; audio: Buffer[] }>();
  const other: Record<string, string> = {};
  let others = false;
  for await (const c of chunks) {
    if (c.object === 'chat.completion') return c; // the app answered a completion itself
    if (!isChatChunk(c)) {
      others = true;
      for (const [k, v] of Object.entries(c)) other[k] = (other[k] ?? '') + (typeof v === 'string' ? v : JSON.stringify(v));
      continue;
    }
    head ??= c;
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      const acc = choices.get(ch.index) ?? { content: '', finish: null, audio: [] };
      choices.set(ch.index, acc);
      if (typeof ch.delta?.content === 'string') acc.content += ch.delta.content;
      if (ch.delta?.audio?.data) acc.audio.push(Buffer.from(ch.delta.audio.data, 'base64'));
      if (ch.finish_reason) acc.finish = ch.finish_reason;
    }
  }
  if (others && choices.size === 0) choices.set(0, { content: JSON.stringify(other), finish: 'stop', audio: [] });
  return {
    id: typeof head?.id === 'string' ? head.id : `chatcmpl-${Date.now().toString(36)}`,
    object: 'chat.completion',
    created: typeof head?.created === 'number' ? head.created : Math.floor(Date.now() / 1000),
    model: typeof head?.model === 'string' && head.model ? head.model : requestedModel,
    choices: [...choices.entries()].sort(([a], [b]) => a - b).map(([index, acc]) => ({
      index,
      message: {
        role: 'assistant',
        content: acc.content,
        refusal: null,
        ...(acc.audio.length ? { audio: { data: Buffer.concat(acc.audio).toString('base64') } } : {}),
      },
      finish_reason: acc.finish ?? 'stop',
      logprobs: null,
    })),
    usage,
  };
}
