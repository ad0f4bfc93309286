/** Prometheus metrics of one sidecar server (own registry, so several servers can share a process in tests). */
import { Counter, Gauge, Registry } from 'prom-client';

export interface MemoryStats {
  bytesInUse: number;
  bytesFree: number;
  waiting: number;
  chunks: number;
}

export function createMetrics(node: string, stats: () => MemoryStats) {
  const registry = new Registry();
  registry.setDefaultLabels({ node });
  const gauge = (name: string, help: string, pick: (s: MemoryStats) => number) =>
    new Gauge({ name, help, registers: [registry], collect() { this.set(pick(stats())); } });
  gauge('sidecar_shm_bytes_in_use', 'Shared-memory bytes held by chunks (whole slots)', (s) => s.bytesInUse);
  gauge('sidecar_shm_bytes_free', 'Shared-memory bytes free', (s) => s.bytesFree);
  gauge('sidecar_alloc_waiting', 'Allocations currently waiting for memory', (s) => s.waiting);
  gauge('sidecar_chunks_held', 'Chunks currently held', (s) => s.chunks);
  return {
    registry,
    transfers: new Counter({ name: 'sidecar_transfers_total', help: 'Chunks stored, by origin (local send or from a peer node)', labelNames: ['origin'], registers: [registry] }),
    bytesMoved: new Counter({ name: 'sidecar_bytes_moved_total', help: 'Chunk bytes moved, by path (local, to_peer, from_peer)', labelNames: ['path'], registers: [registry] }),
    memoryWaits: new Counter({ name: 'sidecar_memory_waits_total', help: 'Allocations that had to wait under memory pressure', registers: [registry] }),
    expiredBytes: new Counter({ name: 'sidecar_expired_bytes_total', help: 'Bytes of expired chunks', registers: [registry] }),
    producerFailures: new Counter({ name: 'sidecar_producer_failures_total', help: 'Ids failed by their producer (fail() or disconnect)', registers: [registry] }),
    freed: new Counter({ name: 'sidecar_chunks_freed_total', help: 'Chunks freed, by reason (done; expired: nobody consumed them before their expiry; failed: their producer failed)', labelNames: ['reason'], registers: [registry] }),
  };
}

export type SidecarMetrics = ReturnType<typeof createMetrics>;
