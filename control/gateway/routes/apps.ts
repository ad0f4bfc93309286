/**
 * App routes (docs/architecture.md §4): register (SSE), unregister, list, invoke (proxied to the app function).
 * Register answers its up-front failures (bad source 400, bad name 400, name taken 409) as a plain error reply;
 * once the checks pass, the reply is the SSE stream (initial, progress..., final | error), as in the reference.
 */
import type { Agent, IncomingMessage, ServerResponse } from 'node:http';
import express, { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { parseOr422, readWhole, wholeBody } from '../../../lib/http.js';
import { tracingOn } from '../../../lib/telemetry.js';
import type { AppFunctions } from '../app-functions.js';
import type { AppManager } from '../app-manager.js';
import { requestDeadline } from '../deadline.js';
import { AppNotReadyError, UnsupportedMediaTypeError } from '../errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { forward } from '../proxy.js';
import type { FunctionLinks } from '../function-link.js';
import { startSse } from '../sse.js';

export interface AppRoutesDeps {
  apps: AppManager;
  functions: AppFunctions;
  metrics: GatewayMetrics;
  agent: Agent;
  /** The framed links to the app functions (`up`'s default hop); without, invocations go over HTTP with `agent`. */
  links?: FunctionLinks;
  admin: RequestHandler;
  json: RequestHandler;
  /** Raw body (Buffer) with the same cap: invocations are forwarded byte for byte, the function validates them. */
  raw: RequestHandler;
  /** How long an invocation waits for a restarting app function. @default 30 s */
  restartWaitMs?: number;
}

const registerBody = z
  .object({
    source: z.string().min(1).optional(),
    /** The reference's field name. */
    source_code: z.string().min(1).optional(),
    name: z.string().optional(),
    alias: z.string().optional(),
    /** The file the source came from: the check's problems name it. */
    file_name: z.string().optional(),
  })
  .refine((b) => b.source !== undefined || b.source_code !== undefined, { message: 'source is required (the app\'s TypeScript text)', path: ['source'] });

export function appRoutes(deps: AppRoutesDeps): Router {
  const { apps, admin, json } = deps;
  const r = Router();

  r.post('/app/register', admin, json, async (req, res) => {
    const body = parseOr422(registerBody, req.body, 'register body');
    // Up-front failures (bad source, bad name, name taken) are a 4xx before the stream starts: `curl -f` sees them.
    const prepared = await apps.prepare({ source: (body.source ?? body.source_code)!, ...(body.name ? { name: body.name } : {}), ...(body.alias ? { alias: body.alias } : {}), ...(body.file_name ? { fileName: body.file_name } : {}) });
    const sse = startSse(res);
    await apps.deploy(prepared, (event) => sse.send(event));
    sse.end();
  });

  r.post('/app/unregister/:app_id', admin, async (req, res) => {
    const entry = await apps.unregister(String(req.params.app_id));
    res.json({ app_id: entry.appId, name: entry.name, message: `app ${entry.name} unregistered` });
  });

  /** `{app_id: state}` like the reference; `?details=1` gives names, aliases and task ids too. */
  r.get('/app/list', async (req, res) => {
    res.json(req.query.details ? await apps.details() : await apps.list());
  });

  r.post(INVOKE_ROUTE, deps.raw, (req, res) => invokeApp(deps, String(req.params.app_id), req, res, Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)));

  return r;
}

export const INVOKE_ROUTE = '/app/invoke/:app_id';
const INVOKE_PREFIX = '/app/invoke/';

/**
 * The invoke route ahead of express (the hot path): `POST /app/invoke/<id>` in its canonical form, without a query
 * string, is served from the server's request listener with node:http's own req/res — no express dispatch, no
 * prototype swap of req and res (that costs the route about 80 µs per request in process, twice the rest of the
 * gateway's HTTP work). Anything else (other case, trailing slash, a query, a malformed %-escape), every request while
 * tracing is on and every request once the gateway stops go to express unchanged. Returns whether it took the request.
 */
export function hotInvoke(deps: AppRoutesDeps, limitBytes: number, hooks: HotInvokeHooks): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    if (req.method !== 'POST' || deps.apps.stopping || tracingOn()) return false;
    const appId = appIdOf(req.url ?? '');
    if (appId === undefined) return false;
    hooks.onRequest(res, INVOKE_ROUTE);
    const notJson = unsupportedMediaType(req);
    if (notJson) {
      hooks.onError(notJson, req, res);
      return true;
    }
    readWhole(req, limitBytes)
      .then((body) => invokeApp(deps, appId, req, res, body))
      .catch((err: unknown) => hooks.onError(err, req, res));
    return true;
  };
}

export interface HotInvokeHooks {
  /** Told the route name when the request is taken (the http metrics middleware does this for the other routes). */
  onRequest(res: ServerResponse, route: string): void;
  /** Answers an error (what express's error handler does for the other routes). */
  onError(err: unknown, req: IncomingMessage, res: ServerResponse): void;
}

/** The app id of `/app/invoke/<id>` (one non-empty segment, no query), %-escapes decoded; else undefined. */
function appIdOf(path: string): string | undefined {
  if (!path.startsWith(INVOKE_PREFIX) || path.length === INVOKE_PREFIX.length) return undefined;
  const id = path.slice(INVOKE_PREFIX.length);
  if (id.includes('/') || id.includes('?')) return undefined;
  if (!id.includes('%')) return id;
  try {
    return decodeURIComponent(id);
  } catch {
    return undefined; // express answers the malformed escape
  }
}

async function invokeApp(deps: AppRoutesDeps, appIdOrName: string, req: IncomingMessage & { query?: Record<string, unknown> }, res: ServerResponse, body: Buffer): Promise<void> {
  const { apps, functions, metrics, agent } = deps;
  const entry = apps.resolve(appIdOrName);
  if (entry.state !== 'ready' && functions.state(entry.appId) === undefined) throw new AppNotReadyError(entry.name);
  const deadline = requestDeadline(req);
  const ticket = apps.admit(entry); // 503 while the app is unregistered or the gateway stops; drains wait for it
  const done = metrics.invocationStarted(entry.name, entry.appId);
  res.on('close', () => {
    ticket.end();
    done(res.statusCode);
  });
  // A ready function and an open link come as they are: no await (a turn of the microtask queue each) for them.
  const ready = functions.waitReady(entry.appId, Math.min(deadline, Date.now() + (deps.restartWaitMs ?? 30_000)));
  const target = ready instanceof Promise ? await ready : ready;
  const dialled = deps.links?.get(target.url);
  const link = dialled instanceof Promise ? await dialled : dialled;
  await forward(res, {
    link,
    url: `${target.url}/invoke`,
    body,
    deadline,
    ...(typeof req.headers.traceparent === 'string' ? { traceparent: req.headers.traceparent } : {}),
    agent,
    what: `app ${entry.name}`,
    onFailure: (err) => functions.failure(entry.appId, target.generation, err),
    signal: ticket.signal,
    onErrorCode: (code) => metrics.errors.inc({ code }),
  });
}

/**
 * Every body the gateway takes is JSON: a body sent with another content type (text/plain, a form: curl -d without
 * -H) is a 415, not silently parsed as JSON or dropped. A body without a content type is taken as JSON.
 */
export function unsupportedMediaType(req: IncomingMessage): UnsupportedMediaTypeError | undefined {
  const type = req.headers['content-type'];
  if (type === undefined || type === '' || type === 'application/json') return undefined;
  const mime = type.split(';', 1)[0]!.trim().toLowerCase();
  return mime === 'application/json' || mime.endsWith('+json') ? undefined : new UnsupportedMediaTypeError(type);
}

/** Refuses non-JSON bodies (415), then runs `body`. */
const jsonOnly = (body: RequestHandler): RequestHandler => (req, res, next) => {
  const notJson = unsupportedMediaType(req);
  if (notJson) return next(notJson);
  body(req, res, next);
};

export const jsonBody = (limitBytes: number) => jsonOnly(express.json({ limit: limitBytes }));
/** Invocation bodies are forwarded byte for byte: read them whole, without body-parser's type machinery. */
export const rawBody = (limitBytes: number) => jsonOnly(wholeBody(limitBytes));
