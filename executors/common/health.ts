/**
 * An executor's `GET /health` is its whole health: every part it needs to serve a request (router, engine process,
 * worker threads, preprocessing threads, ...). 200 `{status: 'ok', parts}` while all are up; otherwise 503
 * `{status: 'unavailable', parts, error: {code, message}}` naming the first part that is down. The task manager
 * takes a 503 executor out of the routes at once and restarts it (control/taskmanager/health-policy.ts). That this
 * route answers at all stands for the router.
 */
import type { RequestHandler } from 'express';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';

/**
 * The executor id the platform gave this process, in every health answer: the platform's probes check it, so a
 * process that took over the port (a free-port race between two starting processes) is not taken for this one.
 */
const executorId = () => process.env[EXECUTOR_ENV.executorId] || undefined;

export interface HealthPart {
  /** e.g. 'engine', 'preprocess' */
  name: string;
  up: () => boolean;
  /** The error code and message when it is down, e.g. EXECUTOR_ENGINE_DEAD. */
  code: string;
  message: string;
}

/** `details` = facts about the executor added to every answer, e.g. `execution` (its provider and device). */
export function healthReport(parts: readonly HealthPart[], details: Record<string, unknown> = {}): { status: number; body: Record<string, unknown> } {
  const state = Object.fromEntries(parts.map((p) => [p.name, p.up() ? 'up' : 'down']));
  const down = parts.find((p) => state[p.name] === 'down');
  const id = executorId();
  const who = id ? { executor: id } : {};
  if (!down) return { status: 200, body: { status: 'ok', parts: state, ...who, ...details } };
  return { status: 503, body: { status: 'unavailable', parts: state, error: { code: down.code, message: down.message }, ...who, ...details } };
}

export function healthRoute(parts: readonly HealthPart[], details?: Record<string, unknown>): RequestHandler {
  return (_req, res) => {
    const { status, body } = healthReport(parts, details);
    res.status(status).json(body);
  };
}
