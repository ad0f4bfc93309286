/** Prometheus metrics of one Geri (own registry, so tests can run several servers in one process). */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

const LATENCY = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export interface GeriGaugeSources {
  /** Requests being served (receiving, queued or generating). */
  inflight(): number;
  /** Requests waiting for their embeddings. */
  receiving(): number;
}

export function createGeriMetrics(sources: GeriGaugeSources, labels: Record<string, string> = {}) {
  const registry = new Registry();
  registry.setDefaultLabels(labels);
  const registers = [registry];
  new Gauge({ name: 'cornserve_geri_inflight_requests', help: 'Requests being served (receiving, queued or generating)', registers, collect() { this.set(sources.inflight()); } });
  new Gauge({ name: 'cornserve_geri_receiving_requests', help: 'Requests waiting for their embeddings from the sidecar', registers, collect() { this.set(sources.receiving()); } });
  return {
    registry,
    requests: new Counter({ name: 'cornserve_geri_requests_total', help: 'Generation requests by route and outcome (ok, cancelled, error code)', labelNames: ['route', 'outcome'], registers }),
    duration: new Histogram({ name: 'cornserve_geri_request_duration_seconds', help: 'Request received → last byte', labelNames: ['route'], buckets: LATENCY, registers }),
    receive: new Histogram({ name: 'cornserve_geri_embeddings_wait_seconds', help: 'Request received → all embedding chunks received', buckets: LATENCY, registers }),
    embeddingBytes: new Counter({ name: 'cornserve_geri_embedding_bytes_total', help: 'Embedding bytes received from the sidecar', registers }),
    batchSize: new Histogram({ name: 'cornserve_geri_batch_size', help: 'Requests generated together', buckets: [1, 2, 4, 8, 16, 32, 64], registers }),
    audioChunks: new Counter({ name: 'cornserve_geri_audio_chunks_total', help: 'PCM16 chunks streamed', registers }),
  };
}

export type GeriMetrics = ReturnType<typeof createGeriMetrics>;
