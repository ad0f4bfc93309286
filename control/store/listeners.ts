import { logger } from '../../lib/log.js';
import type { StoreChange } from '../../lib/store.js';

const log = logger('store');

/** Calls one change listener; a listener that throws is logged, never allowed to break the store or other listeners. */
export function deliver(listener: (change: StoreChange) => void, change: StoreChange): void {
  try {
    listener(change);
  } catch (err) {
    log.error({ err, change }, 'store change listener threw');
  }
}
