/**
 * The echo executor: answers POST /echo with the text it got, after a configurable service time,
 * either as one JSON object or as NDJSON chunks. Used by control-plane tests and the overhead benchmark.
 * With `maxConcurrency`, at most that many requests are served at once and the rest wait in FIFO order, so
 * the executor's capacity is exactly maxConcurrency ÷ service time (the autoscaling tests and benchmark use it).
 * GET /load reports what waits past maxConcurrency, the busy time (executors/common/busy-meter.ts) and maxConcurrency
 * itself (null = no limit) to the autoscaler.
 */
import express from 'express';
import { z } from 'zod';
import { errorHandler, parseOr422 } from '../../lib/http.js';
import { logger } from '../../lib/log.js';
import { traceRequests } from '../../lib/telemetry.js';
import { sleep } from '../../lib/wait.js';
import { hopBodyLimitBytes } from '../../lib/body-limit.js';
import { healthRoute } from '../common/health.js';
import { BusyMeter } from '../common/busy-meter.js';
import { ConcurrencySlots } from './slots.js';

export const echoRequestSchema = z.object({
  text: z.string(),
  chunks: z.number().int().positive().max(10_000).optional(),
  service_time_ms: z.number().int().nonnegative().default(0),
});

export interface EchoServerOptions {
  executorId?: string;
  /** Default service time when a request does not carry one. */
  serviceTimeMs?: number;
  /** Requests served at once; the rest queue (FIFO). Unset = no limit. */
  maxConcurrency?: number;
}

export function buildEchoServer(options: EchoServerOptions = {}): express.Express {
  const log = logger('echo', { executor: options.executorId });
  const app = express();
  let inFlight = 0;
  let served = 0;
  const slots = options.maxConcurrency === undefined ? undefined : new ConcurrencySlots(options.maxConcurrency);
  const busy = new BusyMeter();
  app.use(traceRequests('echo'));
  app.use(express.json({ limit: hopBodyLimitBytes() })); // what the gateway accepts, this accepts (lib/body-limit.ts)
  app.get('/health', healthRoute([])); // the router is all there is
  app.get('/info', (_req, res) => {
    res.json({ kind: 'echo', executorId: options.executorId ?? null, inFlight, served, maxConcurrency: slots?.limit ?? null, queued: slots?.queued ?? 0 });
  });
  // The autoscaler's executor-side signals (control/autoscaler/executor-load.ts): requests waiting past
  // maxConcurrency, cumulative busy time (≥ 1 request served) since start, and the limit itself (the capacity
  // estimate extrapolates latency no further than the requests served at once).
  app.get('/load', (_req, res) => {
    const { busyMs, uptimeMs } = busy.reading();
    res.json({ queued: slots?.queued ?? 0, in_flight: inFlight, busy_ms: busyMs, uptime_ms: uptimeMs, max_concurrency: slots?.limit ?? null });
  });
  app.post('/echo', async (req, res) => {
    const body = parseOr422(echoRequestSchema, req.body, 'echo request');
    const serviceTime = req.body?.service_time_ms === undefined ? (options.serviceTimeMs ?? 0) : body.service_time_ms;
    inFlight++;
    const aborted = new AbortController();
    res.on('close', () => aborted.abort(new Error('client went away')));
    let holding = false;
    let serving = false;
    try {
      if (slots) {
        await slots.acquire(aborted.signal);
        holding = true;
      }
      busy.begin();
      serving = true;
      if (serviceTime > 0) await sleep(serviceTime, aborted.signal);
      if (body.chunks === undefined) {
        res.json({ echo: body.text });
        return;
      }
      res.setHeader('content-type', 'application/x-ndjson');
      for (let i = 0; i < body.chunks && !aborted.signal.aborted; i++) res.write(`${JSON.stringify({ echo: body.text, index: i })}\n`);
      res.end();
    } catch (e) {
      if (!aborted.signal.aborted) throw e;
      log.debug('request abandoned by the caller');
    } finally {
      if (serving) busy.end();
      if (holding) slots!.release();
      inFlight--;
      served++;
    }
  });
  app.use(errorHandler(log));
  return app;
}
