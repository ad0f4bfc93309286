import test from 'ava';
import { paretoFrontier, saturationPoint, sweepStopped } from '../../../../policies/frontier.js';
import type { ProfilePoint } from '../../../../lib/autoscale.js';

const pt = (concurrency: number, throughputRps: number, p99Ms: number, devicesPerExecutor = 1): ProfilePoint => ({ devicesPerExecutor, concurrency, throughputRps, p50Ms: p99Ms / 2, p99Ms });

test('the frontier keeps the points no other point beats on both throughput and p99, by rising p99', (t) => {
  const points = [pt(1, 50, 22), pt(2, 100, 24), pt(4, 100, 45), pt(8, 101, 90), pt(4, 90, 30, 2)];
  t.deepEqual(paretoFrontier(points), [pt(1, 50, 22), pt(2, 100, 24), pt(8, 101, 90)]);
});

test('the frontier keeps one of several equal points, the one at the lowest concurrency', (t) => {
  t.deepEqual(paretoFrontier([pt(4, 100, 40), pt(2, 100, 40)]), [pt(2, 100, 40)]);
});

test('the frontier of nothing is empty', (t) => {
  t.deepEqual(paretoFrontier([]), []);
});

test('a sweep stops after two steps in a row without an 8% gain, not after one noisy step', (t) => {
  t.false(sweepStopped([50, 100]));
  t.false(sweepStopped([50, 100, 103]));
  t.true(sweepStopped([50, 100, 103, 101]));
  t.false(sweepStopped([50, 100, 103, 130]));
  t.false(sweepStopped([50, 100, 90, 120]));
});

test('the saturation point is the lowest concurrency within 8% of the best throughput', (t) => {
  t.deepEqual(saturationPoint([pt(1, 50, 22), pt(2, 97, 24), pt(4, 100, 45), pt(8, 99, 90)]), pt(2, 97, 24));
  t.is(saturationPoint([]), undefined);
});
