/** Prometheus metrics of one sidecar server (own registry, so several servers can share a process in tests). */
import { Counter, Gauge, Registry } from 'prom-client';
import type { LedgerStats } from './ledger.js';

export interface MemoryStats {
  bytesInUse: number;
  bytesFree: number;
  waiting: number;
  chunks: number;
}

/** `stats` runs once per gauge and scrape (cheap counters); `ledgerStats` walks the live ids, so it runs once per scrape. */
export function createMetrics(node: string, stats: () => MemoryStats, ledgerStats: () => LedgerStats) {
  const registry = new Registry();
  registry.setDefaultLabels({ node });
  const gauge = (name: string, help: string, pick: (s: MemoryStats) => number) =>
    new Gauge({ name, help, registers: [registry], collect() { this.set(pick(stats())); } });
  gauge('sidecar_shm_bytes_in_use', 'Shared-memory bytes held by chunks (whole slots)', (s) => s.bytesInUse);
  gauge('sidecar_shm_bytes_free', 'Shared-memory bytes free', (s) => s.bytesFree);
  gauge('sidecar_alloc_waiting', 'Allocations currently waiting for memory', (s) => s.waiting);
  gauge('sidecar_chunks_held', 'Chunks currently held', (s) => s.chunks);
  new Gauge({
    name: 'sidecar_ledger_entries', help: 'Ledger entries, by kind (live_ids: ids with chunks held or recvs waiting; chunks; waiting: recvs; tombstones: consumed/failed ids remembered for the ttl)',
    labelNames: ['kind'], registers: [registry],
    collect() {
      const l = ledgerStats();
      this.set({ kind: 'live_ids' }, l.liveIds);
      this.set({ kind: 'chunks' }, l.chunks);
      this.set({ kind: 'waiting' }, l.waiting);
      this.set({ kind: 'tombstones' }, l.tombstones);
    },
  });
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
