import test from 'ava';
import { IndependentDevice, SharedCores } from '../../../sim/engine/compute.js';
import { EventQueue } from '../../../sim/engine/queue.js';

/** Starts each job at its time on `compute` and returns when each finished (virtual ms), by name. */
function runJobs(cores: number | 'independent', jobs: Array<{ name: string; at: number; workMs: number }>): Record<string, number> {
  const events = new EventQueue();
  const compute = cores === 'independent' ? new IndependentDevice(events) : new SharedCores(events, cores);
  const ended: Record<string, number> = {};
  for (const j of jobs) events.at(j.at, () => compute.run(j.workMs, () => void (ended[j.name] = events.now)));
  events.run();
  return ended;
}

const close = (t: { true(v: boolean, m?: string): void }, actual: number, expected: number) => t.true(Math.abs(actual - expected) < 1e-9, `${actual} ≠ ${expected}`);

test('two jobs on one core each take twice their solo time', (t) => {
  const ended = runJobs(1, [{ name: 'a', at: 0, workMs: 100 }, { name: 'b', at: 0, workMs: 100 }]);
  close(t, ended.a!, 200);
  close(t, ended.b!, 200);
});

test('as many jobs as cores (or fewer) run at their solo speed', (t) => {
  const ended = runJobs(2, [{ name: 'a', at: 0, workMs: 100 }, { name: 'b', at: 10, workMs: 50 }]);
  close(t, ended.a!, 100);
  close(t, ended.b!, 60);
  t.deepEqual(runJobs(4, [{ name: 'a', at: 0, workMs: 30 }, { name: 'b', at: 0, workMs: 70 }, { name: 'c', at: 5, workMs: 10 }]), runJobs('independent', [{ name: 'a', at: 0, workMs: 30 }, { name: 'b', at: 0, workMs: 70 }, { name: 'c', at: 5, workMs: 10 }]));
});

test('a job joining mid-way slows the running one from then on, and the survivor speeds up when one ends', (t) => {
  // One core. a: 100 ms alone from 0. b: 20 ms of work joining at 40.
  // 0–40: a alone, 60 left. From 40 both at half speed: b needs 40 ms → ends at 80; a did 20 more, 40 left.
  // From 80 a alone again: ends at 120 (= 100 + the 20 ms b took).
  const ended = runJobs(1, [{ name: 'a', at: 0, workMs: 100 }, { name: 'b', at: 40, workMs: 20 }]);
  close(t, ended.b!, 80);
  close(t, ended.a!, 120);
});

test('three jobs on two cores share them at two thirds of a core each', (t) => {
  const ended = runJobs(2, [{ name: 'a', at: 0, workMs: 20 }, { name: 'b', at: 0, workMs: 40 }, { name: 'c', at: 0, workMs: 40 }]);
  // 0–30: each at 2/3 → a done at 30 (20 of work), b and c have 20 left; then 2 jobs on 2 cores at full speed.
  close(t, ended.a!, 30);
  close(t, ended.b!, 50);
  close(t, ended.c!, 50);
});

test('work started from a completion callback joins the shared set at that instant', (t) => {
  const events = new EventQueue();
  const cores = new SharedCores(events, 1);
  const ended: number[] = [];
  cores.run(10, () => cores.run(10, () => ended.push(events.now)));
  cores.run(30, () => ended.push(events.now));
  events.run();
  // 0–20: two at half speed → the first 10 ms job ends at 20, the 30 ms one has 20 left; its follow-up (10 ms) joins:
  // 20–40 both at half → the follow-up ends at 40, the long one has 10 left → ends at 50.
  t.deepEqual(ended, [40, 50]);
  t.is(cores.maxBusy, 2);
});

test('the same jobs give the same completion times and order, run after run', (t) => {
  const jobs = Array.from({ length: 40 }, (_, i) => ({ name: `j${i}`, at: (i * 7) % 23, workMs: 1 + ((i * 13) % 17) }));
  const order = () => {
    const events = new EventQueue();
    const cores = new SharedCores(events, 2);
    const seen: string[] = [];
    for (const j of jobs) events.at(j.at, () => cores.run(j.workMs, () => seen.push(`${j.name}@${events.now}`)));
    events.run();
    return seen;
  };
  const first = order();
  t.is(first.length, jobs.length);
  t.deepEqual(order(), first);
});

test('jobs that end at the same instant complete in the order they started', (t) => {
  const events = new EventQueue();
  const cores = new SharedCores(events, 1);
  const seen: string[] = [];
  for (const name of ['x', 'y', 'z']) cores.run(5, () => seen.push(name));
  events.run();
  t.deepEqual(seen, ['x', 'y', 'z']);
  t.is(events.now, 15);
});

test('shared cores refuse a non-positive core count and negative work', (t) => {
  const events = new EventQueue();
  t.throws(() => new SharedCores(events, 0), { instanceOf: RangeError });
  t.throws(() => new SharedCores(events, 2).run(-1, () => {}), { instanceOf: RangeError });
});
