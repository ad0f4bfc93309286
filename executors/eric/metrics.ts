/** Eric's Prometheus metrics (own registry, labelled with the executor id and modality). */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export function createEricMetrics(labels: Record<string, string>, live: { inflight: () => number; queued: () => number }) {
  const registry = new Registry();
  registry.setDefaultLabels(labels);
  const seconds = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
  new Gauge({ name: 'eric_requests_in_flight', help: 'POST /embeddings requests being served', registers: [registry], collect() { this.set(live.inflight()); } });
  new Gauge({ name: 'eric_preprocess_queue', help: 'Items waiting for a preprocessing thread', registers: [registry], collect() { this.set(live.queued()); } });
  return {
    registry,
    requests: new Counter({ name: 'eric_requests_total', help: 'POST /embeddings requests by HTTP status', labelNames: ['status'], registers: [registry] }),
    items: new Counter({ name: 'eric_items_total', help: 'Items by outcome (ok or an error code)', labelNames: ['outcome'], registers: [registry] }),
    latency: new Histogram({ name: 'eric_request_seconds', help: 'POST /embeddings latency', buckets: seconds, registers: [registry] }),
    stage: new Histogram({ name: 'eric_stage_seconds', help: 'Time per request stage (load, preprocess, engine)', labelNames: ['stage'], buckets: seconds, registers: [registry] }),
    forwardedBytes: new Counter({
      name: 'eric_forwarded_bytes_total', labelNames: ['path'], registers: [registry],
      help: 'Bytes of forwarded embeddings past the sidecar\'s inline size, by how they reached shared memory: in_place (the projector wrote them there) or copied',
    }),
    batchSize: new Histogram({ name: 'eric_batch_size', help: 'Items in the engine batch each item ran in', buckets: [1, 2, 4, 8, 16, 32, 64], registers: [registry] }),
  };
}

export type EricMetrics = ReturnType<typeof createEricMetrics>;
