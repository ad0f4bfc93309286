/**
 * Where the other sidecars are: which node serves a rank, and that node's address. Fixed peers (`--peer`) are
 * known from the start; with a Store, the sidecars registered there are found on demand: a rank or node this
 * sidecar does not know, or a peer it cannot reach, makes it re-read the registrations (one `listSidecars`,
 * shared by every caller waiting for it and at most once per `minRefreshMs`). Lookups between refreshes are Map
 * reads, so a transfer never waits on the Store once its peer is known.
 *
 * A change of a node's address (a restart on a new port, a new instance) or its disappearance (it stopped, or its
 * lease ended and it was reaped) is reported through `changed`, so the links to it follow.
 */
import type { SidecarRecord, Store } from '../../lib/store.js';
import type { PeerAddress } from './peers.js';
import { sleep } from '../../lib/wait.js';

export type SidecarRegistry = Pick<Store, 'listSidecars'>;

export interface KnownPeer extends PeerAddress {
  /** The registered instance (undefined for a fixed peer). */
  instance?: string;
}

export interface DirectoryOptions {
  self: string;
  fixed: PeerAddress[];
  registry: SidecarRegistry | undefined;
  /** A node's address changed (`peer`) or it is gone (undefined). */
  changed(node: string, peer: KnownPeer | undefined): void;
  /** @default 100 */
  minRefreshMs?: number;
  clock?: () => number;
}

const sameAddress = (a: KnownPeer, b: KnownPeer) => a.host === b.host && a.port === b.port && a.instance === b.instance;

export class PeerDirectory {
  private peers = new Map<string, KnownPeer>();
  private ranks = new Map<number, string>();
  private refreshing: Promise<void> | undefined;
  private refreshedAt = -Infinity;
  private readonly clock: () => number;

  constructor(private readonly o: DirectoryOptions) {
    this.clock = o.clock ?? Date.now;
    this.rebuild([]);
  }

  /** True when peers come from a Store (and may join, move or leave). */
  get dynamic(): boolean { return this.o.registry !== undefined; }

  nodeOf(rank: number): string | undefined { return this.ranks.get(rank); }

  peer(node: string): KnownPeer | undefined { return this.peers.get(node); }

  nodes(): string[] { return [...this.peers.keys()]; }

  /**
   * Re-reads the registrations. Concurrent callers share one read, and reads are at least `minRefreshMs` apart: a
   * call sooner waits for the next one (a burst of unknown ranks costs one read, and a sidecar that registered
   * just after the last read is still found). Rejects when the Store does.
   */
  refresh(): Promise<void> {
    const registry = this.o.registry;
    if (!registry) return Promise.resolve();
    if (this.refreshing) return this.refreshing;
    const wait = this.refreshedAt + (this.o.minRefreshMs ?? 100) - this.clock();
    this.refreshing = (wait > 0 ? sleep(wait) : Promise.resolve()).then(() => registry.listSidecars()).then(
      (records) => { this.refreshedAt = this.clock(); this.refreshing = undefined; this.rebuild(records); },
      (err: unknown) => { this.refreshing = undefined; throw err; },
    );
    return this.refreshing;
  }

  /** Fixed peers, overridden by what the peers registered themselves (their own word is newer). */
  private rebuild(records: SidecarRecord[]): void {
    const next = new Map<string, KnownPeer>();
    for (const p of this.o.fixed) next.set(p.node, p);
    for (const r of records) {
      if (r.node !== this.o.self) next.set(r.node, { node: r.node, host: r.host, port: r.peerPort, ranks: r.ranks, instance: r.instance });
    }
    const ranks = new Map<number, string>();
    for (const p of next.values()) for (const rank of p.ranks) ranks.set(rank, p.node);
    const before = this.peers;
    this.peers = next;
    this.ranks = ranks;
    for (const [node, p] of next) {
      const old = before.get(node);
      if (old && !sameAddress(old, p)) this.o.changed(node, p);
    }
    for (const node of before.keys()) if (!next.has(node)) this.o.changed(node, undefined);
  }
}
