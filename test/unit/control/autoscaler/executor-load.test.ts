import test from 'ava';
import { busyFractionBetween, taskExecutorLoads } from '../../../../control/autoscaler/executor-load.js';

test('the busy fraction is the busy time between two readings over the time between them', (t) => {
  t.is(busyFractionBetween({ queued: 0, busyMs: 100, uptimeMs: 1000 }, { queued: 0, busyMs: 600, uptimeMs: 2000 }), 0.5);
  t.is(busyFractionBetween(undefined, { queued: 0, busyMs: 600, uptimeMs: 2000 }), undefined, 'no previous reading');
  t.is(busyFractionBetween({ queued: 0, busyMs: 600, uptimeMs: 2000 }, { queued: 0, busyMs: 10, uptimeMs: 50 }), undefined, 'the executor restarted');
});

test('a task adds its executors\' queues and requests held, counts the executors that said what they hold, and averages their busy fractions', (t) => {
  const loads = taskExecutorLoads([
    { taskId: 'a', prev: { queued: 0, busyMs: 0, uptimeMs: 0 }, now: { queued: 3, inFlight: 5, busyMs: 1000, uptimeMs: 1000 } },
    { taskId: 'a', prev: { queued: 0, busyMs: 0, uptimeMs: 0 }, now: { queued: 1, inFlight: 3, busyMs: 0, uptimeMs: 1000 } },
    { taskId: 'b', prev: undefined, now: { queued: 2, busyMs: 5, uptimeMs: 10 } },
  ]);
  t.deepEqual(loads.get('a'), { queueDepth: 4, inFlight: 8, serving: 2, busyFraction: 0.5 });
  t.deepEqual(loads.get('b'), { queueDepth: 2, serving: 0, busyFraction: undefined });
});

test('a task\'s concurrency limit is the smallest its executors report, absent when none reports one', (t) => {
  const loads = taskExecutorLoads([
    { taskId: 'a', prev: undefined, now: { queued: 0, busyMs: 0, uptimeMs: 10, concurrencyLimit: 3 } },
    { taskId: 'a', prev: undefined, now: { queued: 0, busyMs: 0, uptimeMs: 10, concurrencyLimit: 2 } },
    { taskId: 'a', prev: undefined, now: { queued: 0, busyMs: 0, uptimeMs: 10 } },
    { taskId: 'b', prev: undefined, now: { queued: 0, busyMs: 0, uptimeMs: 10 } },
  ]);
  t.is(loads.get('a')!.concurrencyLimit, 2);
  t.false('concurrencyLimit' in loads.get('b')!);
});
