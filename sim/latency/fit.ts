/**
 * Fitting latency models from profiles (least squares with ml-regression-multivariate-linear; its weights
 * come back with the intercept LAST).
 */
import MLR from 'ml-regression-multivariate-linear';

/** y ≈ w0·x0 + w1·x1 + … + intercept; returns [intercept, w0, w1, …] (intercept 0 when fitted through the origin). */
export function fitLinear(xs: readonly (readonly number[])[], ys: readonly number[], o: FitOptions = {}): number[] {
  if (xs.length !== ys.length || xs.length === 0) throw new RangeError(`fit needs as many samples as outputs (got ${xs.length} and ${ys.length})`);
  const intercept = o.intercept ?? true;
  const mlr = new MLR(xs.map((x) => [...x]), ys.map((y) => [y]), { intercept });
  const w = mlr.weights.map((row) => row[0]!);
  return [intercept ? w.pop()! : 0, ...w];
}

/** intercept false: fit through the origin (a measured profile whose free fit gives a negative constant term). */
export interface FitOptions { intercept?: boolean }

export interface PrefillSample { tokens: readonly number[]; ms: number }
export interface DecodeSample { contexts: readonly number[]; ms: number }
export interface UnitSample { units: number; ms: number }

/** Prefill: a + b·Σtokens + c·Σtokens². */
export function fitPrefill(samples: readonly PrefillSample[], o: FitOptions = {}) {
  const [a, b, c] = fitLinear(samples.map((s) => [sum(s.tokens), sum(s.tokens.map((t) => t * t))]), samples.map((s) => s.ms), o);
  return { a: a!, b: b!, c: c! };
}

/** Decode step: a + b·Σcontext + c·batch. */
export function fitDecode(samples: readonly DecodeSample[], o: FitOptions = {}) {
  const [a, b, c] = fitLinear(samples.map((s) => [sum(s.contexts), s.contexts.length]), samples.map((s) => s.ms), o);
  return { a: a!, b: b!, c: c! };
}

/** a + b·units (an encoder's batch, or a generator step's batch size). */
export function fitUnits(samples: readonly UnitSample[], o: FitOptions = {}) {
  const [a, b] = fitLinear(samples.map((s) => [s.units]), samples.map((s) => s.ms), o);
  return { a: a!, b: b! };
}

const sum = (v: readonly number[]) => v.reduce((x, y) => x + y, 0);
