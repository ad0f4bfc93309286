/**
 * GET /health and GET /metrics (Prometheus text format). /health carries the store's state when the gateway watches
 * it: 503 `{status: 'degraded', store}` while the store cannot be reached or is being reconciled after it lost its
 * data (requests that need it fail then), 200 `{status: 'ok', store}` otherwise.
 */
import { Router } from 'express';
import { Registry } from 'prom-client';
import type { StoreHealth } from '../../store/watch.js';
import type { GatewayMetrics } from '../metrics.js';

export function healthRoutes(metrics: GatewayMetrics, extraRegistries: Registry[] = [], storeHealth?: () => StoreHealth): Router {
  const r = Router();
  const registry = extraRegistries.length ? Registry.merge([metrics.registry, ...extraRegistries]) : metrics.registry;
  r.get('/health', (_req, res) => {
    const store = storeHealth?.();
    if (!store) return void res.json({ status: 'ok' });
    res.status(store.state === 'ok' ? 200 : 503).json({ status: store.state === 'ok' ? 'ok' : 'degraded', store });
  });
  r.get('/metrics', async (_req, res) => {
    res.setHeader('content-type', registry.contentType);
    res.send(await registry.metrics());
  });
  return r;
}
