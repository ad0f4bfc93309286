/**
 * The one rule for a request's deadline, applied by every hop that reads one (gateway, app function, dispatcher,
 * executors), so a value one hop accepts is never refused by the next:
 *
 *   a deadline is epoch milliseconds written as a positive integer (digits only, when it is text), no later
 *   than the latest time a Date holds (8.64e15 ms, year 275760); absent means now + the default.
 *
 * A deadline in the past is valid (the request then ends with its hop's DEADLINE_EXCEEDED). Each hop keeps its
 * own error for a bad value (`invalid`), always a 400 naming the field.
 *
 *   const deadline = parseDeadline(req.headers[DEADLINE_HEADER], { where: `the ${DEADLINE_HEADER} header`, invalid: (m) => new BadRequestError(m) });
 */
import { DEADLINE_HEADER, DEFAULT_DEADLINE_MS } from '../functions/sdk/dispatch.js';

export { DEADLINE_HEADER, DEFAULT_DEADLINE_MS };

/** The latest epoch-ms value a Date holds: a later deadline could not even be printed. */
export const LATEST_DEADLINE_MS = 8.64e15;

export interface DeadlineRule {
  /** What carried the value, for the error message: "the x-cornserve-deadline header". */
  where: string;
  /** The hop's own 400 error for a bad value. */
  invalid: (message: string) => Error;
  /** The timeout when the value is absent (DEFAULT_DEADLINE_MS). */
  defaultMs?: number;
  now?: number;
}

/** A positive integer of milliseconds from a number or its decimal text; NaN for anything else. */
function wholeMs(value: unknown): number {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : NaN;
  if (typeof value === 'string' && /^[0-9]{1,16}$/.test(value)) {
    const n = Number(value);
    return Number.isSafeInteger(n) && n > 0 ? n : NaN;
  }
  return NaN;
}

const shown = (value: unknown) => JSON.stringify(String(value)).slice(0, 60);

/** The deadline `value` stands for (see the rule above); throws `rule.invalid(...)` for a bad one. */
export function parseDeadline(value: unknown, rule: DeadlineRule): number {
  if (value === undefined) return (rule.now ?? Date.now()) + (rule.defaultMs ?? DEFAULT_DEADLINE_MS);
  const ms = wholeMs(value);
  if (!(ms <= LATEST_DEADLINE_MS)) throw rule.invalid(`${rule.where} must be a deadline in epoch milliseconds (a positive integer), got ${shown(value)}`);
  return ms;
}

/** A deadline `value` milliseconds from now (a `timeout_ms` parameter): a positive integer, by the same rule. */
export function deadlineAfter(value: unknown, rule: DeadlineRule): number {
  const ms = wholeMs(value);
  const deadline = (rule.now ?? Date.now()) + ms;
  if (!(deadline <= LATEST_DEADLINE_MS)) throw rule.invalid(`${rule.where} must be a positive integer of milliseconds, got ${shown(value)}`);
  return deadline;
}
