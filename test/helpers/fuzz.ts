/**
 * fast-check's settings for the fuzz tests. The suite runs them from a fixed seed, so a CI run is reproducible and a
 * failure it shows is the same on every machine; `FUZZ_SEED=random` (or a number) explores other inputs by hand.
 * Every failure found that way becomes a named regression test.
 */
import fc from 'fast-check';

const DEFAULT_SEED = 20261207;

export function configureFuzz(settings: { numRuns?: number } = {}): void {
  const env = process.env.FUZZ_SEED;
  const seed = env === 'random' ? undefined : env ? Number(env) : DEFAULT_SEED;
  fc.configureGlobal({ includeErrorInReport: true, ...settings, ...(seed !== undefined ? { seed } : {}) });
}
