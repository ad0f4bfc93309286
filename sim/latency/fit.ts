/**
 * Fitting latency models from profiles (least squares with ml-regression-multivariate-linear; its weights
 * come back with the intercept LAST — toolchain.md §9.4).
 */
import MLR from 'ml-regression-multivariate-linear';

/** y ≈ w0·x0 + w1·x1 + … + intercept; returns [intercept, w0, w1, …]. */
export function fitLinear(xs: readonly (readonly number[])[], ys: readonly number[]): number[] {
  if (xs.length !== ys.length || xs.length === 0) throw new RangeError(`fit needs as many samples as outputs (got ${xs.length} and ${ys.length})`);
  const mlr = new MLR(xs.map((x) => [...x]), ys.map((y) => [y]), { intercept: true });
  const w = mlr.weights.map((row) => row[0]!);
  const intercept = w.pop()!;
  return [intercept, ...w];
}

export interface PrefillSample { tokens: readonly number[]; ms: number }
export interface DecodeSample { contexts: readonly number[]; ms: number }
export interface UnitSample { units: number; ms: number }

/** Prefill: a + b·Σtokens + c·Σtokens². */
export function fitPrefill(samples: readonly PrefillSample[]) {
  const [a, b, c] = fitLinear(samples.map((s) => [sum(s.tokens), sum(s.tokens.map((t) => t * t))]), samples.map((s) => s.ms));
  return { a: a!, b: b!, c: c! };
}

/** Decode step: a + b·Σcontext + c·batch. */
export function fitDecode(samples: readonly DecodeSample[]) {
  const [a, b, c] = fitLinear(samples.map((s) => [sum(s.contexts), s.contexts.length]), samples.map((s) => s.ms));
  return { a: a!, b: b!, c: c! };
}

/** a + b·units (an encoder's batch, or a generator step's batch size). */
export function fitUnits(samples: readonly UnitSample[]) {
  const [a, b] = fitLinear(samples.map((s) => [s.units]), samples.map((s) => s.ms));
  return { a: a!, b: b! };
}

const sum = (v: readonly number[]) => v.reduce((x, y) => x + y, 0);
