/** GET /health and GET /metrics (Prometheus text format). */
import { Router } from 'express';
import { Registry } from 'prom-client';
import type { GatewayMetrics } from '../metrics.js';

export function healthRoutes(metrics: GatewayMetrics, extraRegistries: Registry[] = []): Router {
  const r = Router();
  const registry = extraRegistries.length ? Registry.merge([metrics.registry, ...extraRegistries]) : metrics.registry;
  r.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/metrics', async (_req, res) => {
    res.setHeader('content-type', registry.contentType);
    res.send(await registry.metrics());
  });
  return r;
}
