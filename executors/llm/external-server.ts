/**
 * The adapter executor for an external OpenAI-compatible server (the `external` LLM descriptor): forwards
 * `POST /v1/chat/completions` to the upstream (SSE passed through byte for byte, errors with their status),
 * answers `/health` only while the upstream answers `GET /v1/models`, and cancels the upstream call when its
 * caller goes away or the request's deadline passes.
 */
import express from 'express';
import { logger, type Logger } from '../../lib/log.js';
import { traceHeaders, traceRequests } from '../../lib/telemetry.js';
import { deadlineTimer } from '../../lib/wait.js';
import { deadlineOf } from '../common/deadline.js';
import { llmErrors, toOpenAIError } from './errors.js';
import { hopBodyLimitBytes } from '../../lib/body-limit.js';

export interface ExternalServerOptions {
  /** Base URL of the upstream server (its routes are under /v1). */
  upstream: string;
  apiKey?: string;
  executorId?: string;
  /** Upstream call timeout without an x-cornserve-deadline header. @default 300000 */
  defaultTimeoutMs?: number;
  log?: Logger;
}

export function buildExternalServer(opts: ExternalServerOptions): express.Express {
  const log = opts.log ?? logger('llm-external', { executor: opts.executorId });
  const base = opts.upstream.replace(/\/+$/, '').replace(/\/v1$/, '');
  const auth: Record<string, string> = opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {};
  let inFlight = 0;
  let served = 0;
  const app = express();
  app.use(traceRequests('llm-external'));
  app.use(express.json({ limit: hopBodyLimitBytes() })); // what the gateway accepts, this accepts (lib/body-limit.ts)

  app.get('/health', async (_req, res) => {
    try {
      const r = await fetch(`${base}/v1/models`, { headers: auth, signal: AbortSignal.timeout(2000) });
      await r.body?.cancel();
      res.status(r.ok ? 200 : 503).json({ status: r.ok ? 'ok' : 'upstream unhealthy', ...(opts.executorId ? { executor: opts.executorId } : {}), upstream: base, upstreamStatus: r.status });
    } catch (e) {
      res.status(503).json({ status: 'upstream unreachable', upstream: base, error: (e as Error).message });
    }
  });
  app.get('/info', (_req, res) => {
    res.json({ kind: 'llm-external', executorId: opts.executorId ?? null, upstream: base, inFlight, served });
  });
  app.get('/v1/models', async (_req, res) => {
    const r = await fetch(`${base}/v1/models`, { headers: auth, signal: AbortSignal.timeout(10_000) });
    res.status(r.status).type(r.headers.get('content-type') ?? 'application/json').send(Buffer.from(await r.arrayBuffer()));
  });

  app.post('/v1/chat/completions', async (req, res) => {
    const ac = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) ac.abort(new Error('the caller went away'));
    });
    let deadline: number;
    try {
      deadline = deadlineOf(req, opts.defaultTimeoutMs ?? 300_000, llmErrors.badDeadline);
    } catch (e) {
      const { status, body } = toOpenAIError(e);
      res.status(status).json(body);
      return;
    }
    const timer = deadlineTimer(deadline, () => ac.abort(new Error('deadline exceeded')));
    inFlight++;
    try {
      let up: Response;
      try {
        up = await fetch(`${base}/v1/chat/completions`, {
          method: 'POST', signal: ac.signal, body: JSON.stringify(req.body),
          headers: { 'content-type': 'application/json', ...auth, ...traceHeaders() },
        });
      } catch (e) {
        if (ac.signal.aborted && res.writableEnded) return;
        const { body } = toOpenAIError(e);
        res.status(502).json({ error: { ...body.error, code: 'LLM_UPSTREAM_FAILED', type: 'server_error', message: `the external LLM server ${base} failed: ${(e as Error).message}` } });
        return;
      }
      res.status(up.status);
      for (const h of ['content-type', 'cache-control']) {
        const v = up.headers.get(h);
        if (v) res.setHeader(h, v);
      }
      res.flushHeaders();
      try {
        for await (const piece of up.body as unknown as AsyncIterable<Uint8Array>) res.write(piece);
      } catch (e) {
        if (!ac.signal.aborted) log.warn({ err: e }, 'upstream stream broke');
      }
      res.end();
    } finally {
      timer.clear();
      inFlight--;
      served++;
    }
  });
  return app;
}
