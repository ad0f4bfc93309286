/**
 * Sessions: interactive clients (scripts, notebooks) that hold unit tasks deployed while they live.
 *
 * A session's declared tasks count as usage in the resource manager, exactly like an app's: declare_used deploys
 * what is missing (or adds one to the usage of an equivalent deployed task), declare_not_used releases. A session
 * counts each task once, however often it declares it (the reference counted twice but remembered once, leaking
 * usage). When the session closes (its socket closed) or stays silent past the timeout, everything it holds is
 * released, so executors nothing else uses are torn down. Operations of one session run one at a time, in order.
 */
import { randomUUID } from 'node:crypto';
import type { UnitTask } from '../../../functions/sdk/index.js';
import { CornserveError } from '../../../functions/sdk/index.js';
import type { Logger } from '../../../lib/log.js';
import { Mutex } from '../../resources/mutex.js';
import type { ResourceManagerApi } from '../../resources/types.js';
import { taskIdOf } from '../../store/index.js';
import { SessionTable } from './table.js';

/**
 * The reference releases a session only when its socket closes; its client heartbeats every 5 s. A silent but
 * open socket (a paused notebook kernel, a half-open TCP connection) is released after 6 missed heartbeats.
 */
export const DEFAULT_SESSION_TIMEOUT_MS = 30_000;
export const CLIENT_HEARTBEAT_MS = 5_000;

/** A frame for a session that no longer exists (closed, or expired after the timeout). */
export class UnknownSessionError extends CornserveError {
  constructor(id: string, why: string) {
    super('UNKNOWN_SESSION', `unknown session ${id}: ${why}; its tasks were released, open a new session`, 404, { sessionId: id });
  }
}

export interface SessionsOptions {
  resources: ResourceManagerApi;
  log: Logger;
  /** Release a session silent for this long. @default DEFAULT_SESSION_TIMEOUT_MS */
  timeoutMs?: number;
  /** @default Date.now */
  now?: () => number;
  /** How often expiry is checked. @default min(1 s, timeout / 4) */
  sweepEveryMs?: number;
}

export class Sessions {
  readonly #table: SessionTable;
  readonly #locks = new Map<string, Mutex>();
  /** Operations in flight per session. */
  readonly #busy = new Map<string, number>();
  /** Why a session that is gone went away (for the error a late frame gets). */
  readonly #gone = new Map<string, string>();
  readonly #now: () => number;
  readonly #sweeper: NodeJS.Timeout;

  constructor(private readonly opts: SessionsOptions) {
    this.#table = new SessionTable(opts.timeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS);
    this.#now = opts.now ?? Date.now;
    this.#sweeper = setInterval(() => void this.sweep(), opts.sweepEveryMs ?? Math.max(10, Math.min(1_000, Math.floor(this.#table.timeoutMs / 4))));
    this.#sweeper.unref();
  }

  get timeoutMs(): number {
    return this.#table.timeoutMs;
  }

  open(): string {
    const id = randomUUID();
    this.#table.open(id, this.#now());
    this.#locks.set(id, new Mutex());
    this.opts.log.info({ session: id }, 'session opened');
    return id;
  }

  /** Marks the session alive; throws UnknownSessionError for a session that is gone. */
  heartbeat(id: string): void {
    if (!this.#table.touch(id, this.#now())) throw new UnknownSessionError(id, this.#gone.get(id) ?? 'it was never opened');
  }

  /** The task ids the session holds. */
  held(id: string): string[] {
    return [...(this.#table.get(id)?.tasks.keys() ?? [])];
  }

  ids(): string[] {
    return this.#table.ids();
  }

  /** Deploys (or adds usage to) the tasks the session does not hold yet; all or nothing. */
  declareUsed(id: string, tasks: UnitTask[]): Promise<string[]> {
    this.heartbeat(id);
    return this.#run(id, async () => {
      const entry = this.#entry(id);
      const fresh = [...new Map(tasks.map((t) => [taskIdOf(t), t])).entries()].filter(([taskId]) => !entry.tasks.has(taskId));
      if (fresh.length) {
        await this.opts.resources.deploy(fresh.map(([, t]) => t));
        if (this.#table.get(id) !== entry) {
          // Closed while deploying: give the usage straight back.
          await this.opts.resources.release(fresh.map(([taskId]) => taskId));
          throw new UnknownSessionError(id, this.#gone.get(id) ?? 'it closed');
        }
        for (const [taskId, t] of fresh) entry.tasks.set(taskId, t.name);
        this.opts.log.info({ session: id, tasks: fresh.map(([taskId]) => taskId) }, 'session declared tasks used');
      }
      return tasks.map(taskIdOf);
    });
  }

  /** Releases the given tasks the session holds (others are ignored, as in the reference). */
  declareNotUsed(id: string, tasks: UnitTask[]): Promise<void> {
    this.heartbeat(id);
    return this.#run(id, async () => {
      const entry = this.#entry(id);
      const held = [...new Set(tasks.map(taskIdOf))].filter((taskId) => entry.tasks.has(taskId));
      held.forEach((taskId) => entry.tasks.delete(taskId));
      if (held.length) await this.opts.resources.release(held);
    });
  }

  /** Ends the session and releases everything it holds. Idempotent. */
  async close(id: string, why = 'it closed'): Promise<void> {
    const lock = this.#locks.get(id);
    const entry = this.#table.remove(id);
    if (!entry || !lock) return;
    this.#gone.set(id, why);
    if (this.#gone.size > 10_000) this.#gone.delete(this.#gone.keys().next().value!);
    // After the operations already queued, so a deploy in flight is released too.
    await lock.run(async () => {
      const taskIds = [...entry.tasks.keys()];
      entry.tasks.clear();
      if (taskIds.length) await this.opts.resources.release(taskIds);
      this.opts.log.info({ session: id, released: taskIds, why }, 'session ended; its tasks were released');
    });
    this.#locks.delete(id);
  }

  /** Closes every session silent past the timeout. */
  async sweep(): Promise<void> {
    const now = this.#now();
    await Promise.all(
      this.#table.expired(now).filter((id) => !this.#busy.has(id)).map((id) =>
        this.close(id, `no heartbeat for more than ${this.#table.timeoutMs} ms`).catch((err) => this.opts.log.error({ err, session: id }, 'releasing an expired session failed')),
      ),
    );
  }

  async closeAll(): Promise<void> {
    clearInterval(this.#sweeper);
    await Promise.allSettled(this.#table.ids().map((id) => this.close(id, 'the gateway stopped')));
  }

  #entry(id: string) {
    const entry = this.#table.get(id);
    if (!entry) throw new UnknownSessionError(id, this.#gone.get(id) ?? 'it closed');
    return entry;
  }

  /** Runs an operation of the session in order; while it runs (a deploy may take long) the session cannot expire. */
  #run<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const lock = this.#locks.get(id);
    if (!lock) throw new UnknownSessionError(id, this.#gone.get(id) ?? 'it closed');
    this.#busy.set(id, (this.#busy.get(id) ?? 0) + 1);
    return lock.run(fn).finally(() => {
      const left = (this.#busy.get(id) ?? 1) - 1;
      if (left > 0) this.#busy.set(id, left);
      else this.#busy.delete(id);
      this.#table.touch(id, this.#now());
    });
  }
}
