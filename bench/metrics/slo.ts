/**
 * SLOs, goodput and attainment. A request is good when it succeeded and meets every SLO given (DistServe's
 * definition; vLLM's --goodput). Attainment = good / all requests sent (a failed request never attains).
 */
import { tpotMs, type RequestRecord } from './record.js';

export interface Slo {
  ttft_ms?: number;
  tpot_ms?: number;
  e2el_ms?: number;
}

export class SloInputError extends Error {
  override readonly name = 'SloInputError';
}

const SLO_KEYS = ['ttft_ms', 'tpot_ms', 'e2el_ms'] as const;

/** `ttft_ms=500,tpot_ms=50,e2el_ms=5000` (any subset, at least one) → Slo. */
export function parseSlo(text: string): Slo {
  const slo: Slo = {};
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [key, value, ...rest] = part.split('=');
    if (!SLO_KEYS.includes(key as (typeof SLO_KEYS)[number])) throw new SloInputError(`--slo: unknown key '${key}' (one of ${SLO_KEYS.join(', ')})`);
    const n = Number(value);
    if (rest.length || value === undefined || value.trim() === '' || !Number.isFinite(n) || n <= 0) throw new SloInputError(`--slo: ${key} needs a positive number of ms, got '${part}'`);
    if (slo[key as keyof Slo] !== undefined) throw new SloInputError(`--slo: ${key} is given twice`);
    slo[key as keyof Slo] = n;
  }
  if (Object.keys(slo).length === 0) throw new SloInputError(`--slo: '${text}' names no SLO (e.g. ttft_ms=500,tpot_ms=50)`);
  return slo;
}

export function meetsSlo(r: RequestRecord, slo: Slo): boolean {
  if (!r.ok) return false;
  if (slo.ttft_ms !== undefined && !(r.ttftMs !== undefined && r.ttftMs <= slo.ttft_ms)) return false;
  if (slo.e2el_ms !== undefined && !(r.e2elMs !== undefined && r.e2elMs <= slo.e2el_ms)) return false;
  if (slo.tpot_ms !== undefined) {
    const t = tpotMs(r);
    if (t !== undefined && t > slo.tpot_ms) return false; // one-token requests have no TPOT and pass it (as vLLM)
  }
  return true;
}

export interface SloOutcome {
  good: number;
  /** good / all requests; NaN when no request was sent. */
  attainment: number;
  /** good requests per second. */
  goodput: number;
}

export function sloOutcome(records: readonly RequestRecord[], slo: Slo, durationS: number): SloOutcome {
  const good = records.filter((r) => meetsSlo(r, slo)).length;
  return { good, attainment: records.length ? good / records.length : NaN, goodput: durationS > 0 ? good / durationS : 0 };
}
