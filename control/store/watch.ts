/**
 * StoreWatch: does the store answer, and is it still the store this process wrote to?
 *
 * Every `intervalMs` it claims the store's generation with a fresh candidate (Store.claimEpoch). The first answer
 * is the generation this process works in. Later: the same generation back = all is well; a failure = the store is
 * unavailable (GET /health says so); another generation = the store lost its data (Redis restarted empty: the
 * claim just set a new one, or another process did): `onLost` reconciles what this process runs against the
 * now-empty store. The generation is adopted only once `onLost` succeeded, so a reconciliation cut short (the store
 * went down again) runs again at the next check. Checks never overlap.
 */
import { randomBytes } from 'node:crypto';
import { logger } from '../../lib/log.js';
import type { Store } from '../../lib/store.js';

const log = logger('store');

export type StoreState = 'ok' | 'unavailable' | 'reconciling';

/** What GET /health shows of the store. */
export interface StoreHealth {
  backend: 'memory' | 'redis';
  state: StoreState;
  /** Epoch ms of the last state change. */
  since: number;
  /** Times the store was found emptied (and reconciled) since this process started. */
  losses: number;
  /** Why it is unavailable (the platform's message). */
  reason?: string;
}

export interface StoreWatchOptions {
  backend: StoreHealth['backend'];
  /** @default 1000 */
  intervalMs?: number;
  /** Reconciles this process with a store that lost its data; must be idempotent (it runs again if it throws). */
  onLost?: () => Promise<void>;
  now?: () => number;
  newEpoch?: () => string;
}

/** What one claim means, given the generation this process works in (undefined before the first claim). */
export function epochVerdict(mine: string | undefined, inForce: string): 'first' | 'same' | 'lost' {
  if (mine === undefined) return 'first';
  return inForce === mine ? 'same' : 'lost';
}

export class StoreWatch {
  #mine: string | undefined;
  #state: StoreState = 'ok';
  #since: number;
  #losses = 0;
  #reason: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;
  readonly #now: () => number;

  constructor(private readonly store: Pick<Store, 'claimEpoch'>, private readonly opts: StoreWatchOptions) {
    this.#now = opts.now ?? Date.now;
    this.#since = this.#now();
  }

  /** The first check (it fixes this process's generation), then one every interval. */
  async start(): Promise<void> {
    await this.check();
    this.#timer = setInterval(() => void this.check(), this.opts.intervalMs ?? 1000);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  health(): StoreHealth {
    return { backend: this.opts.backend, state: this.#state, since: this.#since, losses: this.#losses, ...(this.#reason ? { reason: this.#reason } : {}) };
  }

  /** One check (a check asked for while one runs shares it). */
  check(): Promise<void> {
    this.#checking ??= this.#check().finally(() => (this.#checking = undefined));
    return this.#checking;
  }

  async #check(): Promise<void> {
    let inForce: string;
    try {
      inForce = await this.store.claimEpoch((this.opts.newEpoch ?? newEpoch)());
    } catch (err) {
      const reason = (err as Error).message;
      if (this.#state !== 'unavailable') log.warn({ reason, cause: String((err as Error).cause ?? '') }, 'the store cannot be reached: requests that need it get 503 STORE_UNAVAILABLE until it answers');
      this.#set('unavailable', reason);
      return;
    }
    const verdict = epochVerdict(this.#mine, inForce);
    if (verdict === 'lost') {
      if (this.#state !== 'reconciling') log.warn({ was: this.#mine, now: inForce }, 'the store came back without its data: stopping what it no longer records');
      this.#set('reconciling');
      try {
        await this.opts.onLost?.();
      } catch (err) {
        log.error({ err }, 'reconciling with the emptied store failed; trying again at the next check');
        return;
      }
      this.#losses++;
      log.warn({ epoch: inForce }, 'reconciled with the emptied store: what it does not record was stopped');
    } else if (this.#state !== 'ok') {
      log.info('the store answers again');
    }
    this.#mine = inForce;
    this.#set('ok');
  }

  #set(state: StoreState, reason?: string): void {
    if (state !== this.#state) this.#since = this.#now();
    this.#state = state;
    this.#reason = reason;
  }
}

const newEpoch = () => randomBytes(8).toString('hex');
