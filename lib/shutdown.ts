import type { Server } from 'node:http';
import { stopTelemetry } from './telemetry.js';

/** What stops a process: told why (the signal, or e.g. 'disconnect'); may be async. */
export type CloseFn = (reason: string) => Promise<unknown> | unknown;

export interface Shutdown {
  /** Whether shutdown has begun (so an engine exiting then is not reported as a crash). */
  readonly stopping: boolean;
  /** Begins shutdown for another reason than a signal (the parent went away, ...); later calls do nothing. */
  stop(reason: string): void;
}

export interface ShutdownOptions {
  /** Exit 0 anyway once shutdown has taken this long (a close that hangs). @default no limit */
  timeoutMs?: number;
}

/**
 * Clean shutdown of a process on SIGTERM / SIGINT, then exit 0. A second SIGTERM does nothing more (a supervisor
 * repeating itself); a second SIGINT (an operator pressing Ctrl-C again) exits at once with 130.
 *
 *   exitOnSignal(http, () => engine.stop());           // a server: stop accepting, drop keep-alive connections, then cleanup
 *   exitOnSignal(async (sig) => { log.info({ sig }, 'stopping'); await thing.close(); });   // anything else
 *
 * A close or cleanup that throws still ends in exit 0 (the process is going away either way). Spans still
 * buffered are flushed last (bounded), so the process's final spans are not lost.
 */
export function exitOnSignal(close: CloseFn, options?: ShutdownOptions): Shutdown;
export function exitOnSignal(http: Server, cleanup?: () => Promise<unknown> | unknown, options?: ShutdownOptions): Shutdown;
export function exitOnSignal(
  target: Server | CloseFn,
  cleanupOrOptions?: (() => Promise<unknown> | unknown) | ShutdownOptions,
  serverOptions?: ShutdownOptions,
): Shutdown {
  const close: CloseFn =
    typeof target === 'function'
      ? target
      : () => {
          target.close();
          target.closeAllConnections();
          return typeof cleanupOrOptions === 'function' ? cleanupOrOptions() : undefined;
        };
  const options = (typeof target === 'function' ? (cleanupOrOptions as ShutdownOptions | undefined) : serverOptions) ?? {};
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    if (options.timeoutMs !== undefined) setTimeout(() => process.exit(0), options.timeoutMs).unref();
    void Promise.resolve()
      .then(() => close(reason))
      .catch(() => undefined)
      .then(() => Promise.race([stopTelemetry(), new Promise((r) => setTimeout(r, 2_000).unref())]))
      .catch(() => undefined)
      .finally(() => process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => {
    if (stopping) process.exit(130);
    stop('SIGINT');
  });
  return {
    get stopping() {
      return stopping;
    },
    stop,
  };
}
