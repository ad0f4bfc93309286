/** GET /health and GET /metrics (Prometheus text format). */
import { Router } from 'express';
import type { GatewayMetrics } from '../metrics.js';

export function healthRoutes(metrics: GatewayMetrics): Router {
  const r = Router();
  r.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/metrics', async (_req, res) => {
    res.setHeader('content-type', metrics.registry.contentType);
    res.send(await metrics.registry.metrics());
  });
  return r;
}
