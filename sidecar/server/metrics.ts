/** Prometheus metrics of one sidecar server (own registry, so several servers can share a process in tests). */
import { Counter, Gauge, Registry } from 'prom-client';
import type { LedgerStats } from './ledger.js';

export interface MemoryStats {
  bytesInUse: number;
  bytesFree: number;
  waiting: number;
  chunks: number;
}

/**
 * A labelled counter counted per transfer: the hot path adds to plain numbers, folded into the prom-client counter when
 * it is collected (a scrape). prom-client's `inc(labels)` validates and hashes the labels on every call, a measurable
 * cost at tens of thousands of transfers a second.
 */
function tallied<L extends string>(registry: Registry, name: string, help: string, label: string) {
  const counts = new Map<L, number>();
  const counter = new Counter({
    name, help, labelNames: [label], registers: [registry],
    collect() {
      for (const [value, n] of counts) if (n > 0) this.inc({ [label]: value }, n);
      counts.clear();
    },
  });
  return { counter, add(value: L, n = 1): void { counts.set(value, (counts.get(value) ?? 0) + n); } };
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
    transfers: tallied<'local' | 'peer'>(registry, 'sidecar_transfers_total', 'Chunks stored, by origin (local send or from a peer node)', 'origin'),
    bytesMoved: tallied<'local' | 'to_peer' | 'from_peer'>(registry, 'sidecar_bytes_moved_total', 'Chunk bytes moved, by path (local, to_peer, from_peer)', 'path'),
    memoryWaits: new Counter({ name: 'sidecar_memory_waits_total', help: 'Allocations that had to wait under memory pressure', registers: [registry] }),
    expiredBytes: new Counter({ name: 'sidecar_expired_bytes_total', help: 'Bytes of expired chunks', registers: [registry] }),
    producerFailures: new Counter({ name: 'sidecar_producer_failures_total', help: 'Ids failed by their producer (fail() or disconnect)', registers: [registry] }),
    freed: tallied<'done' | 'expired' | 'failed'>(registry, 'sidecar_chunks_freed_total', 'Chunks freed, by reason (done; expired: nobody consumed them before their expiry; failed: their producer failed)', 'reason'),
  };
}

export type SidecarMetrics = ReturnType<typeof createMetrics>;
