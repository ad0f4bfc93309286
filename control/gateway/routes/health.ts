/**
 * GET /health and GET /metrics (Prometheus text format). /health answers 200 while the gateway serves: `status` is
 * `ok`, or `degraded` while a node's sidecar is down (`sidecars` names each node's state; requests that move tensors
 * on that node cannot be served until its supervisor has restarted it, the others are).
 */
import { Router } from 'express';
import { Registry } from 'prom-client';
import type { GatewayMetrics } from '../metrics.js';

export function healthRoutes(metrics: GatewayMetrics, extraRegistries: Registry[] = [], sidecars?: () => Record<string, 'up' | 'down'>): Router {
  const r = Router();
  const registry = extraRegistries.length ? Registry.merge([metrics.registry, ...extraRegistries]) : metrics.registry;
  r.get('/health', (_req, res) => {
    if (!sidecars) return res.json({ status: 'ok' });
    const states = sidecars();
    res.json({ status: Object.values(states).every((s) => s === 'up') ? 'ok' : 'degraded', sidecars: states });
  });
  r.get('/metrics', async (_req, res) => {
    res.setHeader('content-type', registry.contentType);
    res.send(await registry.metrics());
  });
  return r;
}
