import test from 'ava';
import { planPool, type PoolTask } from '../../../../policies/pool.js';

const task = (taskId: string, current: number, want: number, demandRps: number, min = 1): PoolTask => ({ taskId, current, want, min, devicesPerExecutor: 1, demandRps, perExecutorRps: 10 });

test('wants that fit the pool are granted as they are', (t) => {
  t.deepEqual(planPool([task('a', 1, 2, 20), task('b', 1, 2, 20)], 4).map((g) => g.to), [2, 2]);
});

test('four devices, two apps whose demand swaps: the devices follow the demand', (t) => {
  // Phase 1: a is busy (wants 4), b idle. Phase 2: the demand swaps.
  const phase1 = planPool([task('a', 2, 4, 40), task('b', 2, 1, 0)], 4);
  t.deepEqual(phase1.map((g) => g.to), [3, 1]);
  const phase2 = planPool([task('a', 3, 1, 0), task('b', 1, 4, 40)], 4);
  t.deepEqual(phase2.map((g) => g.to), [1, 3]);
});

test('under contention the worst served ÷ offered ratio rises, and no task goes below its min', (t) => {
  // a: 60 req/s, b: 20 req/s, 10 req/s per executor, 5 devices: a starved at 2 of 6 would serve 33 %, b at 2 of 2 100 %.
  const grants = planPool([task('a', 2, 6, 60), task('b', 3, 3, 20, 2)], 5);
  t.deepEqual(grants.map((g) => g.to), [3, 2]);
  t.regex(grants[0]!.reason!, /wanted 6, got 3/);
  t.regex(grants[1]!.reason!, /moved to a/);
});
