/** Sidecar server options: user-facing with documented defaults, compiled (validated, frozen) once at start. */
import type { SlabSpec } from '../shm/memory.js';
import type { PeerAddress } from './peers.js';
import type { Store } from '../../lib/store.js';
import { badRequest } from '../errors.js';

export interface SidecarServerOptions {
  /** This node's name (unique in the cluster). */
  node: string;
  /** Global ranks (devices) served by this sidecar. */
  ranks: number[];
  /** Unix socket the local executors' clients connect to. */
  socketPath: string;
  /** Where peers reach this sidecar. @default '127.0.0.1' */
  host?: string;
  /** TCP port for peer sidecars; 0 picks one. @default 0 */
  peerPort?: number;
  /** HTTP port for /health, /info and /metrics; 0 picks one. @default 0 */
  httpPort?: number;
  /** The other nodes' sidecars and the ranks they serve. @default [] */
  peers?: PeerAddress[];
  /** Shared-memory layout. @default DEFAULT_SLABS (16 MiB of 4 KiB slots + 496 MiB of 256 KiB slots) */
  slabs?: SlabSpec[];
  /** How long an unconsumed chunk is kept (and a consumed id remembered). @default 300_000 (5 min) */
  ttlMs?: number;
  /** How often expired chunks are swept. @default min(1000, ttlMs / 4) */
  sweepMs?: number;
  /**
   * The Store (MemoryStore / RedisStore) this sidecar registers in, finds its peers through, and records where the
   * chunks it produces for other nodes are held. Without one, only the fixed `peers` are known. @default none
   */
  store?: SidecarStore;
  /** How long the registration lives without renewal (renewed every third of it); a crashed sidecar is reaped after it. @default 10_000 */
  leaseMs?: number;
  /** How long a local recv waits before this sidecar asks the Store where its chunk is held. @default 50 */
  findAfterMs?: number;
  /**
   * Heap bytes the small objects on the fast path (≤ INLINE_MAX_BYTES, held outside shared memory) may take at once;
   * past it they take slots like any chunk (so back-pressure still holds). @default a sixteenth of the slabs, ≤ 64 MiB
   */
  inlineBudgetBytes?: number;
}

/** The part of the Store a sidecar uses. */
export type SidecarStore = Pick<Store,
  | 'putChunk' | 'getChunk' | 'deleteChunk' | 'takeExpiredChunks'
  | 'registerSidecar' | 'renewSidecar' | 'listSidecars' | 'deleteSidecar' | 'takeExpiredSidecars'>;

export const KiB = 1024;
export const MiB = 1024 * KiB;

export const DEFAULT_SLABS: SlabSpec[] = [
  { slotBytes: 4 * KiB, slots: 4096 },
  { slotBytes: 256 * KiB, slots: 1984 },
];

export type CompiledSidecarOptions = Readonly<Required<Omit<SidecarServerOptions, 'store'>> & { store: SidecarStore | undefined }>;

export function compileSidecarOptions(o: SidecarServerOptions): CompiledSidecarOptions {
  if (!/^[A-Za-z0-9_.-]+$/.test(o.node)) throw badRequest(`node name "${o.node}" must match [A-Za-z0-9_.-]+`);
  if (o.ranks.length === 0 || !o.ranks.every((r) => Number.isInteger(r) && r >= 0)) throw badRequest('ranks must be non-empty non-negative integers');
  const peers = o.peers ?? [];
  const seen = new Set(o.ranks);
  for (const p of peers) {
    if (p.node === o.node) throw badRequest(`peer ${p.node} has this node's name`);
    for (const r of p.ranks) {
      if (seen.has(r)) throw badRequest(`rank ${r} is served by two sidecars`);
      seen.add(r);
    }
  }
  const ttlMs = o.ttlMs ?? 300_000;
  const slabs = o.slabs ?? DEFAULT_SLABS;
  if (o.inlineBudgetBytes !== undefined && !(Number.isInteger(o.inlineBudgetBytes) && o.inlineBudgetBytes >= 0)) {
    throw badRequest(`inlineBudgetBytes must be a non-negative integer, got ${o.inlineBudgetBytes}`);
  }
  if (o.leaseMs !== undefined && !(o.leaseMs >= 30)) throw badRequest(`leaseMs must be at least 30, got ${o.leaseMs}`);
  return Object.freeze({
    node: o.node,
    ranks: [...o.ranks],
    socketPath: o.socketPath,
    host: o.host ?? '127.0.0.1',
    peerPort: o.peerPort ?? 0,
    httpPort: o.httpPort ?? 0,
    peers,
    slabs,
    ttlMs,
    sweepMs: o.sweepMs ?? Math.min(1000, Math.max(10, ttlMs / 4)),
    store: o.store,
    leaseMs: o.leaseMs ?? 10_000,
    findAfterMs: o.findAfterMs ?? 50,
    inlineBudgetBytes: o.inlineBudgetBytes ?? Math.min(64 * MiB, Math.floor(slabs.reduce((a, s) => a + s.slotBytes * s.slots, 0) / 16)),
  });
}
