/**
 * This sidecar's registration in the Store (rank, address, lease), kept alive while it runs, and the reaping of
 * the sidecars that stopped renewing theirs.
 *
 * Every `leaseMs / 3` the lease is renewed; if it was lost (reaped during a long pause, or the Store restarted
 * empty) the sidecar registers again and puts back the entries of the chunks it holds. Then the same tick reaps:
 * `takeExpiredSidecars` removes every sidecar whose lease ended (a crashed one: its registration and every chunk
 * entry naming its node), and `takeExpiredChunks` removes entries that outlived their chunk's expiry by a lease
 * (a live sidecar deletes its own when it frees a chunk; these are the ones a failed write left). Every live
 * sidecar reaps, so a crash is cleaned up as long as one sidecar runs; the scripts are atomic, so concurrent
 * reapers take each entry once. A Store outage is logged and retried at the next tick.
 */
import type { SidecarRecord, Store } from '../../lib/store.js';
import type { Logger } from '../../lib/log.js';

export type LeaseStore = Pick<Store, 'registerSidecar' | 'renewSidecar' | 'deleteSidecar' | 'takeExpiredSidecars' | 'takeExpiredChunks'>;

export interface LeaseHooks {
  /** The registration was lost and made again: put the chunk entries back. */
  reregistered(): void;
  /** Runs after every tick (the directory re-reads the registrations). */
  ticked(): void;
}

export class SidecarLease {
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly store: LeaseStore,
    private readonly record: Omit<SidecarRecord, 'leaseExpiresAt'>,
    private readonly leaseMs: number,
    private readonly hooks: LeaseHooks,
    private readonly log: Logger,
  ) {}

  /** Registers (replacing a previous instance of this node and its entries) and starts renewing. */
  async start(): Promise<void> {
    await this.store.registerSidecar({ ...this.record, leaseExpiresAt: Date.now() + this.leaseMs });
    this.timer = setInterval(() => { this.ticking ??= this.tick().finally(() => (this.ticking = undefined)); }, Math.max(10, this.leaseMs / 3));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const { node, instance } = this.record;
    try {
      const now = Date.now();
      if (!(await this.store.renewSidecar(node, instance, now + this.leaseMs)) && !this.stopped) {
        this.log.warn({ node, instance }, 'lease lost (reaped, or the store was emptied): registering again');
        await this.store.registerSidecar({ ...this.record, leaseExpiresAt: now + this.leaseMs });
        this.hooks.reregistered();
      }
      const gone = await this.store.takeExpiredSidecars(now);
      for (const s of gone) this.log.warn({ node: s.node, instance: s.instance, leaseEndedAt: s.leaseExpiresAt }, 'reaped a sidecar whose lease ended (crashed?): its registration and chunk entries are removed');
      const stale = await this.store.takeExpiredChunks(now - this.leaseMs);
      if (stale.length) this.log.info({ n: stale.length }, 'removed chunk entries past their expiry');
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'lease renewal or reaping failed; retrying at the next tick');
    }
    if (!this.stopped) this.hooks.ticked();
  }

  /** Stops renewing and removes the registration and this node's chunk entries. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.ticking;
    try {
      await this.store.deleteSidecar(this.record.node, this.record.instance);
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'could not remove the registration: it goes when its lease ends');
    }
  }
}
