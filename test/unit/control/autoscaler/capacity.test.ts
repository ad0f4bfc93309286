import test from 'ava';
import { estimateCapacity, foldLiveSample, profileCapacityAt, profileLatencyAt } from '../../../../policies/capacity.js';
import type { ExecutorLiveStats } from '../../../../lib/autoscale.js';
import { paretoFrontier } from '../../../../policies/frontier.js';
import type { ProfilePoint, TaskProfile } from '../../../../lib/autoscale.js';

const pt = (concurrency: number, throughputRps: number, p50Ms: number, p99Ms: number): ProfilePoint => ({ devicesPerExecutor: 1, concurrency, throughputRps, p50Ms, p99Ms });
// echo, 20 ms per request, 2 at once: 50 req/s at 1, 100 at 2 and beyond (latency grows by queueing).
const points = [pt(1, 50, 20, 22), pt(2, 100, 20, 24), pt(4, 100, 40, 45), pt(8, 100, 80, 90)];
const profile: TaskProfile = { taskKey: 'k', deviceKind: 'cpu', points, frontier: paretoFrontier(points), measuredAt: 0 };
const NOW = 1_000_000;
const live = (latencyMs: number, concurrency: number, extra: Partial<ExecutorLiveStats> = {}): ExecutorLiveStats => ({ executorId: 'e1', taskId: 't', latencyMs, concurrency, samples: 100, updatedAt: NOW - 1000, ...extra });

test('the profile is read at the target: the best point at concurrency ≤ target', (t) => {
  t.is(profileCapacityAt(profile, { min: 0, max: 4, target: 1 })!.throughputRps, 50);
  t.is(profileCapacityAt(profile, { min: 0, max: 4, target: 3 })!.throughputRps, 100);
});

test('the profile is read at the SLO: the best point whose p99 meets it, else the lowest p99', (t) => {
  t.is(profileCapacityAt(profile, { min: 0, max: 4, sloMs: 23 })!.throughputRps, 50);
  t.is(profileCapacityAt(profile, { min: 0, max: 4, sloMs: 100 })!.throughputRps, 100);
  t.is(profileCapacityAt(profile, { min: 0, max: 4, sloMs: 5 })!.concurrency, 1);
});

test('the profile latency is interpolated between measured concurrencies', (t) => {
  t.is(profileLatencyAt(points, 3), 30);
  t.is(profileLatencyAt(points, 0.5), 20);
});

test('past the last measured concurrency the profile latency grows in proportion (requests only queue)', (t) => {
  t.is(profileLatencyAt(points, 16), 160);
});

test('a live backlog past the profile is read as queueing, not as a slower executor', (t) => {
  // 40 in flight at 400 ms on the 100 req/s executor of the profile: it serves flat out, as profiled.
  t.deepEqual(estimateCapacity({ taskId: 't', profile, live: [live(400, 40)], policy: { min: 0, max: 4, target: 2 }, now: NOW }), { taskId: 't', perExecutorRps: 100, source: 'profile' });
});

test('capacity comes from the profile when live latency agrees within the margin', (t) => {
  t.deepEqual(estimateCapacity({ taskId: 't', profile, live: [live(44, 4)], policy: { min: 0, max: 4, target: 2 }, now: NOW }), { taskId: 't', perExecutorRps: 100, source: 'profile' });
});

test('live latency twice the profile’s halves the capacity and says it is live', (t) => {
  t.deepEqual(estimateCapacity({ taskId: 't', profile, live: [live(80, 4)], policy: { min: 0, max: 4, target: 2 }, now: NOW }), { taskId: 't', perExecutorRps: 50, source: 'live' });
});

test('stale or thin live stats do not override the profile', (t) => {
  const policy = { min: 0, max: 4, target: 2 };
  t.is(estimateCapacity({ taskId: 't', profile, live: [live(80, 4, { updatedAt: NOW - 60_000 })], policy, now: NOW })!.source, 'profile');
  t.is(estimateCapacity({ taskId: 't', profile, live: [live(80, 4, { samples: 3 })], policy, now: NOW })!.source, 'profile');
});

test('without a profile, live latency gives capacity by Little’s law at the target', (t) => {
  t.deepEqual(estimateCapacity({ taskId: 't', profile: undefined, live: [live(40, 1.5)], policy: { min: 0, max: 4, target: 2 }, now: NOW }), { taskId: 't', perExecutorRps: 50, source: 'live' });
});

test('without a profile, more in flight than the target gives capacity by Little’s law at the in-flight observed (a backlog is queueing, not slowness)', (t) => {
  // An executor of 10 req/s with 30 queued: 3 s latency. At the target (2 ÷ 3 s) it would read as 0.7 req/s.
  t.deepEqual(estimateCapacity({ taskId: 't', profile: undefined, live: [live(3000, 30)], policy: { min: 0, max: 4, target: 2 }, now: NOW }), { taskId: 't', perExecutorRps: 10, source: 'live' });
});

test('without a profile, the target counts only up to the executor\'s concurrency limit (echo: 200 ms, 1 at a time → 5 req/s, not 10)', (t) => {
  const policy = { min: 0, max: 4, target: 2 };
  t.deepEqual(estimateCapacity({ taskId: 't', profile: undefined, live: [live(200, 1)], policy, concurrencyLimit: 1, now: NOW }), { taskId: 't', perExecutorRps: 5, source: 'live' });
  t.is(estimateCapacity({ taskId: 't', profile: undefined, live: [live(200, 1)], policy, concurrencyLimit: 4, now: NOW })!.perExecutorRps, 10, 'a limit above the target changes nothing');
  // A backlog past the limit is still what the executor serves flat out: 30 in flight over 6 s.
  t.is(estimateCapacity({ taskId: 't', profile: undefined, live: [live(6000, 30)], policy, concurrencyLimit: 1, now: NOW })!.perExecutorRps, 5);
});

test('with a profile, the concurrency limit leaves the profile\'s figure as it is (the profile measured the real frontier)', (t) => {
  t.deepEqual(estimateCapacity({ taskId: 't', profile, live: [], policy: { min: 0, max: 4, target: 2 }, concurrencyLimit: 1, now: NOW }), { taskId: 't', perExecutorRps: 100, source: 'profile' });
});

test('without a profile or live stats there is no figure (the autoscaler’s default applies)', (t) => {
  t.is(estimateCapacity({ taskId: 't', profile: undefined, live: [], policy: { min: 0, max: 4, target: 2 }, now: NOW }), undefined);
});

test('live samples fold into EWMAs of latency and concurrency, counting samples', (t) => {
  const first = foldLiveSample(undefined, { executorId: 'e1', taskId: 't', latencyMs: 20, concurrency: 1 }, 5);
  t.deepEqual(first, { executorId: 'e1', taskId: 't', latencyMs: 20, concurrency: 1, samples: 1, updatedAt: 5 });
  const next = foldLiveSample(first, { executorId: 'e1', taskId: 't', latencyMs: 120, concurrency: 11 }, 9, 0.1);
  t.deepEqual(next, { executorId: 'e1', taskId: 't', latencyMs: 30, concurrency: 2, samples: 2, updatedAt: 9 });
});
