/**
 * Open-loop arrival times, as vLLM's benchmark_serving draws them: inter-arrival gaps are gamma distributed
 * with shape = burstiness (1 = Poisson) and mean 1/rate, so the coefficient of variation is 1/√burstiness.
 * A pattern makes the rate vary in time; the gaps are then drawn in "operational time" (a unit-rate gamma
 * renewal process mapped through the inverse of the cumulative rate), which keeps the burstiness inside
 * every phase. Pure: a seeded RandomSource in, times in ms from the start out.
 */
import type { RandomSource } from './random.js';

export type RatePattern =
  | { kind: 'constant' }
  /** Phases of `periodS` seconds alternating rate·factor ("on") and rate/factor ("off"), starting "on". */
  | { kind: 'on-off'; periodS: number; factor: number }
  /** Phase i (of `periodS` seconds) runs at rates[i] req/s; the last rate holds after the last phase. */
  | { kind: 'step'; rates: number[]; periodS: number };

export interface ArrivalOptions {
  /** Requests per second; Infinity sends every request at time 0. */
  rate: number;
  /** Gamma shape of the gaps: 1 = Poisson, < 1 burstier, > 1 more regular. */
  burstiness: number;
  pattern: RatePattern;
}

/** The rate (req/s) in effect at `tS` seconds. */
export function rateAt(o: Pick<ArrivalOptions, 'rate' | 'pattern'>, tS: number): number {
  const p = o.pattern;
  if (p.kind === 'constant') return o.rate;
  const phase = Math.floor(tS / p.periodS);
  if (p.kind === 'on-off') return phase % 2 === 0 ? o.rate * p.factor : o.rate / p.factor;
  return p.rates[Math.min(phase, p.rates.length - 1)]!;
}

/** Arrival times in ms from the start, ascending, without end (the caller stops by count or duration). */
export function* arrivalTimesMs(o: ArrivalOptions, rng: RandomSource): Generator<number, never> {
  if (o.pattern.kind === 'constant' && o.rate === Infinity) for (;;) yield 0;
  // Walk the phases keeping the cumulative rate Λ at the current phase's start; operational time s is a sum
  // of unit-mean gamma gaps, and t = Λ⁻¹(s).
  const periodS = o.pattern.kind === 'constant' ? Infinity : o.pattern.periodS;
  let phaseStartS = 0;
  let lambdaAtStart = 0;
  let s = 0;
  for (;;) {
    s += rng.gamma(o.burstiness, 1 / o.burstiness);
    for (;;) {
      const r = rateAt(o, phaseStartS);
      const lambdaAtEnd = lambdaAtStart + r * periodS;
      if (r > 0 && s <= lambdaAtEnd) {
        yield (phaseStartS + (s - lambdaAtStart) / r) * 1000;
        break;
      }
      phaseStartS += periodS;
      lambdaAtStart = lambdaAtEnd;
    }
  }
}

/** The first `count` arrivals, or every arrival before `durationMs` (whichever is given; both: the earlier). */
export function takeArrivals(times: Iterator<number>, limit: { count?: number; durationMs?: number }): number[] {
  const out: number[] = [];
  for (;;) {
    if (limit.count !== undefined && out.length >= limit.count) return out;
    const t = times.next().value as number;
    if (limit.durationMs !== undefined && t >= limit.durationMs) return out;
    out.push(t);
  }
}

/** `constant`, `on-off:PERIOD[:FACTOR]` or `step:R1,R2,…:PERIOD` (seconds, req/s) → RatePattern. */
export function parsePattern(text: string): RatePattern {
  const bad = (why: string) => new Error(`--pattern: '${text}' ${why} (constant | on-off:PERIOD_S[:FACTOR] | step:R1,R2,…:PERIOD_S)`);
  const parts = text.trim().split(':');
  const positive = (s: string | undefined, what: string) => {
    const n = Number(s);
    if (s === undefined || s.trim() === '' || !Number.isFinite(n) || n <= 0) throw bad(`needs a positive ${what}`);
    return n;
  };
  if (parts[0] === 'constant' && parts.length === 1) return { kind: 'constant' };
  if (parts[0] === 'on-off' && (parts.length === 2 || parts.length === 3)) {
    return { kind: 'on-off', periodS: positive(parts[1], 'period'), factor: parts[2] === undefined ? 2 : positive(parts[2], 'factor') };
  }
  if (parts[0] === 'step' && parts.length === 3) {
    const rates = parts[1]!.split(',').map((r) => positive(r, 'rate in every step'));
    return { kind: 'step', rates, periodS: positive(parts[2], 'period') };
  }
  throw bad('is not a known pattern');
}

/** The pattern as its command-line text. */
export function patternText(p: RatePattern): string {
  if (p.kind === 'constant') return 'constant';
  if (p.kind === 'on-off') return `on-off:${p.periodS}:${p.factor}`;
  return `step:${p.rates.join(',')}:${p.periodS}`;
}
