/**
 * Eric's HTTP API (express): POST /embeddings, GET /health (503 once the engine or the preprocessing threads are gone), GET /info,
 * GET /modalities, GET /metrics. Only I/O and message passing run on this event loop: preprocessing runs in
 * the pool's threads and inference in the engine's workers, so /health answers while the model runs.
 */
import express from 'express';
import { errorHandler } from '../../../lib/http.js';
import type { Logger } from '../../../lib/log.js';
import { currentTraceparent, traceRequests } from '../../../lib/telemetry.js';
import { deadlineOf } from '../../common/deadline.js';
import { ExecutorErrorCode } from '../../../lib/executor-errors.js';
import { processExecution } from '../../models/execution.js';
import { describeExecution } from '../../models/session-options.js';
import { type HealthPart, healthRoute } from '../../common/health.js';
import type { EricMetrics } from '../metrics.js';
import { type EmbeddingDeps, embed } from './embeddings.js';

export interface AppDeps extends EmbeddingDeps {
  log: Logger;
  metrics: EricMetrics;
  /** The engine process's part of /health (down when it exited or hung). */
  engineHealth: HealthPart;
  info: () => Record<string, unknown>;
  modalities: readonly string[];
  /** Counts requests in flight (for the metrics gauge). */
  inflight: { n: number };
}

export function buildEricApp(deps: AppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(traceRequests('eric'));
  app.use(express.json({ limit: deps.options.maxBodyBytes }));

  app.get('/health', healthRoute([
    deps.engineHealth,
    { name: 'preprocess', up: () => deps.preprocess.healthy, code: ExecutorErrorCode.PREPROCESS_CRASHED, message: 'a crashed preprocessing thread could not be replaced' },
  ], { execution: describeExecution(processExecution()) }));
  app.get('/info', (_req, res) => { res.json(deps.info()); });
  app.get('/modalities', (_req, res) => { res.json(deps.modalities); });
  app.get('/metrics', async (_req, res) => {
    res.set('content-type', deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });

  app.post('/embeddings', async (req, res) => {
    const end = deps.metrics.latency.startTimer();
    const gone = new AbortController();
    res.on('close', () => { if (!res.writableFinished) gone.abort(); });
    deps.inflight.n++;
    try {
      const traceparent = currentTraceparent();
      const answer = await embed(req.body, {
        deadline: deadlineOf(req, deps.options.requestTimeoutMs), signal: gone.signal, ...(traceparent ? { traceparent } : {}),
      }, deps);
      deps.metrics.requests.inc({ status: String(answer.status) });
      res.status(answer.status).json(answer.body);
    } catch (e) {
      deps.metrics.requests.inc({ status: String((e as { status?: number }).status ?? 500) });
      throw e;
    } finally {
      deps.inflight.n--;
      end();
    }
  });

  app.use(errorHandler(deps.log));
  return app;
}
