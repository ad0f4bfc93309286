/**
 * The Store: pick a backend and re-export the contract.
 * `createStore({})` is the embedded MemoryStore; `createStore({redisUrl})` is a RedisStore (call `ready()`).
 */
import { MemoryStore } from './memory.js';
import { RedisStore } from './redis.js';
import type { Store } from '../../lib/store.js';

export interface CreateStoreOptions {
  /** redis://host:port — when absent, the store lives in this process's memory. */
  redisUrl?: string;
  /** Key prefix for Redis. @default 'cornserve:' */
  prefix?: string;
}

export function createStore(opts: CreateStoreOptions = {}): Store {
  if (!opts.redisUrl) return new MemoryStore();
  return new RedisStore({ url: opts.redisUrl, ...(opts.prefix !== undefined ? { prefix: opts.prefix } : {}) });
}

export * from '../../lib/store.js';
export * from '../../lib/store-errors.js';
export { MemoryStore } from './memory.js';
export { RedisStore, type RedisStoreOptions } from './redis.js';
export { taskIdFor, taskIdOf } from './task-id.js';
