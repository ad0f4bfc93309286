/**
 * The chaos run's decisions, apart from its I/O: a seeded schedule of kills, and the accounting of the load's
 * requests against it (answered, failed by code, hung; each failure explained by a kill or not). Pure.
 */
import { RandomSource } from '../../bench/workload/random.js';
import type { RequestRecord } from '../../bench/metrics/record.js';

/** What a kill hits: one process of a kind, found in the platform's process tree. */
export type Target = 'executor' | 'engine' | 'app-function' | 'sidecar' | 'redis';

export interface PlannedKill { atMs: number; target: Target }

/**
 * One kill of each target (executors twice: they are the most numerous), in a seeded order, spread over
 * [`startMs`, `endMs`] with at least `gapMs` between kills so each one heals before the next.
 */
export function chaosSchedule(seed: number, targets: readonly Target[], startMs: number, endMs: number, gapMs: number): PlannedKill[] {
  const rnd = new RandomSource(seed).fork('chaos');
  const order = [...targets, ...(targets.includes('executor') ? ['executor' as const] : [])];
  for (let i = order.length - 1; i > 0; i--) { // Fisher-Yates
    const j = rnd.int(0, i);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  const slot = (endMs - startMs) / order.length;
  if (slot < gapMs) throw new Error(`${order.length} kills need ${order.length * gapMs} ms; the window has ${endMs - startMs}`);
  return order.map((target, i) => ({ target, atMs: Math.round(startMs + i * slot + rnd.uniform() * (slot - gapMs)) }));
}

/** A kill as it happened: when (ms from the load's start), what, and until when the platform was unhealthy after it. */
export interface Kill { atMs: number; target: Target; label: string; healedAtMs: number | null }

export interface Accounting {
  sent: number;
  answered: number;
  /** Failed with an error code the client could act on, by code. */
  failedByCode: Record<string, number>;
  /** No answer before the client's timeout, or an answer after the request's deadline. */
  hung: number;
  /** Failures in flight at a kill, or sent while the platform healed from one. */
  explained: number;
  unexplained: RequestRecord[];
}

const HUNG_CODES = new Set(['CLIENT_TIMEOUT', 'CANCELLED']);

/** Sorts every request of the load against the kills; `deadlineMs` is what each request was allowed. */
export function accountFor(records: readonly RequestRecord[], kills: readonly Kill[], deadlineMs: number): Accounting {
  const a: Accounting = { sent: records.length, answered: 0, failedByCode: {}, hung: 0, explained: 0, unexplained: [] };
  for (const r of records) {
    const end = r.sentMs + (r.e2elMs ?? deadlineMs);
    if ((r.errorCode && HUNG_CODES.has(r.errorCode)) || end - r.sentMs > deadlineMs) a.hung++;
    if (r.ok) { a.answered++; continue; }
    const code = r.errorCode ?? `HTTP_${r.status}`;
    a.failedByCode[code] = (a.failedByCode[code] ?? 0) + 1;
    const inFlight = kills.some((k) => k.atMs >= r.sentMs && k.atMs <= end);
    const whileHealing = kills.some((k) => r.sentMs >= k.atMs && r.sentMs <= (k.healedAtMs ?? Infinity));
    if (inFlight || whileHealing) a.explained++;
    else a.unexplained.push(r);
  }
  return a;
}
