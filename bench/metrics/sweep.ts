/**
 * Rate sweeps: run rates in ascending order and report the highest one at which at least 90% of requests met
 * their SLOs (DistServe's goodput). Attainment only falls as load grows, so the sweep stops at the first rate
 * below the target instead of overloading the server further. Pure.
 */
export const ATTAINMENT_TARGET = 0.9;

export interface SweepPoint {
  /** Offered rate, req/s. */
  rate: number;
  /** SLO attainment in [0, 1]; null when no SLO was given. */
  attainment: number | null;
}

/** `1,2,4,8` → ascending, distinct, positive rates. */
export function parseRates(text: string): number[] {
  const rates = text.split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  if (rates.length === 0 || rates.some((r) => !Number.isFinite(r) || r <= 0)) throw new Error(`--sweep-rates: '${text}' is not a list of positive rates (e.g. 1,2,4,8)`);
  return [...new Set(rates)].sort((a, b) => a - b);
}

/** Whether to run the next rate after these points (always, without SLOs). */
export function continueSweep(points: readonly SweepPoint[], target = ATTAINMENT_TARGET): boolean {
  const last = points.at(-1);
  return last === undefined || last.attainment === null || last.attainment >= target;
}

/** The highest rate of the passing prefix (the rates before the first one below the target); null if none passed. */
export function highestPassingRate(points: readonly SweepPoint[], target = ATTAINMENT_TARGET): number | null {
  let best: number | null = null;
  for (const p of [...points].sort((a, b) => a.rate - b.rate)) {
    if (p.attainment === null || p.attainment < target) break;
    best = p.rate;
  }
  return best;
}
