import test from 'ava';
import { CapacitySource } from '../../../../control/autoscaler/capacity-source.js';
import { paretoFrontier } from '../../../../policies/frontier.js';
import { MemoryStore } from '../../../../control/store/memory.js';
import { sampleTask } from '../../../helpers/store-records.js';

const points = [1, 2, 4].map((c) => ({ devicesPerExecutor: 1, concurrency: c, throughputRps: Math.min(c, 2) * 50, p50Ms: Math.max(20, c * 10), p99Ms: Math.max(22, c * 11) }));

test('the capacity source reads a task’s profile by its unit-task key and device kind, then live stats, from the Store', async (t) => {
  const store = new MemoryStore();
  const task = sampleTask(1);
  await store.acquireTask(task);
  const source = new CapacitySource(store, { deviceKind: 'cpu', now: () => 10_000 });
  await source.refresh();
  t.is(source.provider(task.taskId), undefined); // nothing measured yet: the autoscaler's default applies

  await store.putProfile({ taskKey: task.key, deviceKind: 'gpu', points, frontier: paretoFrontier(points), measuredAt: 0 });
  await source.refresh();
  t.is(source.provider(task.taskId), undefined); // another device kind's profile does not count

  await store.putProfile({ taskKey: task.key, deviceKind: 'cpu', points, frontier: paretoFrontier(points), measuredAt: 0 });
  await source.refresh();
  t.deepEqual(source.provider(task.taskId), { taskId: task.taskId, perExecutorRps: 100, source: 'profile' });

  await store.putExecutorStats({ executorId: 'e1', taskId: task.taskId, latencyMs: 40, concurrency: 2, samples: 50, updatedAt: 9_000 });
  await source.refresh();
  t.deepEqual(source.provider(task.taskId), { taskId: task.taskId, perExecutorRps: 50, source: 'live' }); // twice the profile's 20 ms
});

test('the capacity source passes the executors’ concurrency limit to the live estimate', async (t) => {
  const store = new MemoryStore();
  const task = sampleTask(1);
  await store.acquireTask(task);
  const limits = new Map<string, number>();
  const source = new CapacitySource(store, { deviceKind: 'cpu', now: () => 10_000, concurrencyLimitOf: (id) => limits.get(id) });
  await store.putExecutorStats({ executorId: 'e1', taskId: task.taskId, latencyMs: 200, concurrency: 1, samples: 50, updatedAt: 9_000 });
  await source.refresh();
  t.is(source.provider(task.taskId)!.perExecutorRps, 10); // no limit known: 2 in flight (the default target) ÷ 200 ms
  limits.set(task.taskId, 1);
  t.is(source.provider(task.taskId)!.perExecutorRps, 5); // 1 at a time ÷ 200 ms
});
