/**
 * One logger for every process: pino to stderr, named per component, level from CORNSERVE_LOG_LEVEL.
 * Child processes of the local platform have their lines prefixed by the parent, so keep messages short.
 */
import { pino, type Logger } from 'pino';

const root = pino({
  level: process.env.CORNSERVE_LOG_LEVEL ?? (process.env.NODE_ENV === 'test' ? 'warn' : 'info'),
  base: undefined,
  timestamp: pino.stdTimeFunctions.isoTime,
}, pino.destination(2));

export type { Logger };

export function logger(component: string, bindings: Record<string, unknown> = {}): Logger {
  return root.child({ component, ...bindings });
}
