import test from 'ava';
import { arrivalTimesMs, parsePattern, rateAt, takeArrivals, type ArrivalOptions } from '../../../../bench/workload/arrivals.js';
import { RandomSource } from '../../../../bench/workload/random.js';

const constant = (rate: number, burstiness: number): ArrivalOptions => ({ rate, burstiness, pattern: { kind: 'constant' } });

/** Rate (per s) and coefficient of variation of the gaps of `n` seeded arrivals. */
function gapsOf(o: ArrivalOptions, n: number, seed = 7): { rate: number; cv: number } {
  const times = takeArrivals(arrivalTimesMs(o, new RandomSource(seed)), { count: n });
  const gaps = times.slice(1).map((t, i) => (t - times[i]!) / 1000);
  const mean = gaps.reduce((a, g) => a + g, 0) / gaps.length;
  const sd = Math.sqrt(gaps.reduce((a, g) => a + (g - mean) ** 2, 0) / gaps.length);
  return { rate: 1 / mean, cv: sd / mean };
}

test('Poisson arrivals (burstiness 1) have the asked rate and a coefficient of variation of 1', (t) => {
  const { rate, cv } = gapsOf(constant(10, 1), 20_000);
  t.true(Math.abs(rate - 10) / 10 < 0.03, `rate ${rate}`);
  t.true(Math.abs(cv - 1) < 0.04, `cv ${cv}`);
});

test('gamma arrivals have a coefficient of variation of 1/sqrt(shape)', (t) => {
  for (const shape of [0.25, 4]) {
    const { rate, cv } = gapsOf(constant(5, shape), 20_000);
    t.true(Math.abs(rate - 5) / 5 < 0.04, `shape ${shape}: rate ${rate}`);
    t.true(Math.abs(cv - 1 / Math.sqrt(shape)) / (1 / Math.sqrt(shape)) < 0.06, `shape ${shape}: cv ${cv}`);
  }
});

test('the same seed gives the same arrival times, another seed other times', (t) => {
  const a = takeArrivals(arrivalTimesMs(constant(3, 1), new RandomSource(1)), { count: 50 });
  t.deepEqual(takeArrivals(arrivalTimesMs(constant(3, 1), new RandomSource(1)), { count: 50 }), a);
  t.notDeepEqual(takeArrivals(arrivalTimesMs(constant(3, 1), new RandomSource(2)), { count: 50 }), a);
});

test('an infinite rate sends every request at time 0', (t) => {
  t.deepEqual(takeArrivals(arrivalTimesMs(constant(Infinity, 1), new RandomSource(0)), { count: 4 }), [0, 0, 0, 0]);
});

test('a duration limit keeps only the arrivals before it', (t) => {
  const times = takeArrivals(arrivalTimesMs(constant(20, 1), new RandomSource(3)), { durationMs: 60_000 });
  t.true(times.every((x) => x < 60_000));
  t.true(Math.abs(times.length - 1200) < 120, `${times.length} arrivals in 60 s at 20 req/s`);
});

test('a step pattern runs each phase at its own rate', (t) => {
  const o: ArrivalOptions = { rate: Infinity, burstiness: 1, pattern: { kind: 'step', rates: [5, 20, 50], periodS: 100 } };
  const times = takeArrivals(arrivalTimesMs(o, new RandomSource(11)), { durationMs: 300_000 });
  const inPhase = (i: number) => times.filter((x) => x >= i * 100_000 && x < (i + 1) * 100_000).length / 100;
  for (const [i, r] of [5, 20, 50].entries()) t.true(Math.abs(inPhase(i) - r) / r < 0.1, `phase ${i}: ${inPhase(i)} req/s, asked ${r}`);
});

test('an on-off pattern alternates rate x factor and rate / factor', (t) => {
  const o: ArrivalOptions = { rate: 10, burstiness: 1, pattern: { kind: 'on-off', periodS: 50, factor: 2 } };
  t.is(rateAt(o, 10), 20);
  t.is(rateAt(o, 60), 5);
  const times = takeArrivals(arrivalTimesMs(o, new RandomSource(5)), { durationMs: 400_000 });
  const on = times.filter((x) => Math.floor(x / 50_000) % 2 === 0).length / 200;
  const off = times.filter((x) => Math.floor(x / 50_000) % 2 === 1).length / 200;
  t.true(Math.abs(on - 20) / 20 < 0.08, `on phases ${on} req/s`);
  t.true(Math.abs(off - 5) / 5 < 0.12, `off phases ${off} req/s`);
});

test('patterns parse, and malformed ones are errors naming --pattern', (t) => {
  t.deepEqual(parsePattern('constant'), { kind: 'constant' });
  t.deepEqual(parsePattern('on-off:30'), { kind: 'on-off', periodS: 30, factor: 2 });
  t.deepEqual(parsePattern('on-off:30:4'), { kind: 'on-off', periodS: 30, factor: 4 });
  t.deepEqual(parsePattern('step:1,2,4:10'), { kind: 'step', rates: [1, 2, 4], periodS: 10 });
  for (const bad of ['poisson', 'on-off', 'on-off:-1', 'step:1,x:10', 'step:1,2', 'on-off:10:0']) {
    t.throws(() => parsePattern(bad), { message: /--pattern/ }, bad);
  }
});
