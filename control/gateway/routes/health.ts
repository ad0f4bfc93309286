/**
 * GET /health and GET /metrics (Prometheus text format). /health says what the gateway can serve:
 * - 503 `{status: 'degraded', store}` while the store cannot be reached or is being reconciled after it lost its data
 *   (every request that needs it fails then);
 * - 200 `{status: 'degraded', sidecars}` while a node's sidecar is down (requests that move tensors on that node
 *   cannot be served until its supervisor has restarted it; the others are);
 * - 200 `{status: 'ok'}` otherwise. `store` and `sidecars` are present whenever the gateway watches them.
 */
import { Router } from 'express';
import { AggregatorRegistry, Registry } from 'prom-client';
import { functionMetrics, type MetricsJson } from '../function-metrics.js';
import type { StoreHealth } from '../../store/watch.js';
import type { GatewayMetrics } from '../metrics.js';

export interface HealthSources {
  /** Each node's sidecar state, when `up` supervises sidecars. */
  sidecars?: () => Record<string, 'up' | 'down'>;
  /** The store's state, when the gateway watches it. */
  storeHealth?: () => StoreHealth;
  /** The app functions that dispatch in process: their metrics are summed into /metrics. */
  functionUrls?: () => string[];
}

export function healthRoutes(metrics: GatewayMetrics, extraRegistries: Registry[] = [], sources: HealthSources = {}): Router {
  const { sidecars, storeHealth, functionUrls } = sources;
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
    const nodes = sidecars?.();
    const storeOk = !store || store.state === 'ok';
    const sidecarsOk = !nodes || Object.values(nodes).every((s) => s === 'up');
    res.status(storeOk ? 200 : 503).json({
      status: storeOk && sidecarsOk ? 'ok' : 'degraded',
      ...(store ? { store } : {}),
      ...(nodes ? { sidecars: nodes } : {}),
    });
  });
  r.get('/metrics', async (_req, res) => {
    const all = await registry();
    res.setHeader('content-type', all.contentType);
    res.send(await all.metrics());
  });
  return r;
}
