/**
 * Starts a worker thread running a TypeScript (or JavaScript) module. Worker threads do not inherit the
 * parent's `--import tsx`, so `.ts` modules go through thread-entry.mjs, which registers tsx first.
 */
import { Worker, type WorkerOptions } from 'node:worker_threads';

const ENTRY = new URL('./thread-entry.mjs', import.meta.url);

export function startThread(script: URL, options: Omit<WorkerOptions, 'argv'> = {}): Worker {
  if (!script.pathname.endsWith('.ts')) return new Worker(script, options);
  // execArgv: [] — the parent's `--import` flags (tsx, the local platform's .ts preloads) must not run in the
  // thread before thread-entry.mjs has registered tsx there.
  return new Worker(ENTRY, { execArgv: [], ...options, argv: [script.href] });
}
