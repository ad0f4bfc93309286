/**
 * GET /health and GET /metrics (Prometheus text format). /health carries the store's state when the gateway watches
 * it: 503 `{status: 'degraded', store}` while the store cannot be reached or is being reconciled after it lost its
 * data (requests that need it fail then), 200 `{status: 'ok', store}` otherwise.
 */
import { Router } from 'express';
import { AggregatorRegistry, Registry } from 'prom-client';
import { functionMetrics, type MetricsJson } from '../function-metrics.js';
import type { StoreHealth } from '../../store/watch.js';
import type { GatewayMetrics } from '../metrics.js';

export function healthRoutes(metrics: GatewayMetrics, extraRegistries: Registry[] = [], storeHealth?: () => StoreHealth, functionUrls?: () => string[]): Router {
  const r = Router();
  const merged = extraRegistries.length ? Registry.merge([metrics.registry, ...extraRegistries]) : metrics.registry;
  // With app functions that dispatch in process: the extra registries and theirs summed series by series (same names).
  const registry = async (): Promise<Registry> => {
    const urls = functionUrls?.() ?? [];
    if (urls.length === 0) return merged;
    const parts = await Promise.all([...extraRegistries.map((x) => x.getMetricsAsJSON()), functionMetrics(urls)]);
    const own = parts.slice(0, -1) as MetricsJson[];
    return Registry.merge([metrics.registry, AggregatorRegistry.aggregate([...own, ...(parts.at(-1) as MetricsJson[])])]);
  };
  r.get('/health', (_req, res) => {
    const store = storeHealth?.();
    if (!store) return void res.json({ status: 'ok' });
    res.status(store.state === 'ok' ? 200 : 503).json({ status: store.state === 'ok' ? 'ok' : 'degraded', store });
  });
  r.get('/metrics', async (_req, res) => {
    const all = await registry();
    res.setHeader('content-type', all.contentType);
    res.send(await all.metrics());
  });
  return r;
}
