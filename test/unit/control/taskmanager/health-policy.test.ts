/** The task manager's health decisions and restart backoff, on a fake clock. */
import test from 'ava';
import { ExecutorHealth, restartDelayMs, type HealthPolicyOptions } from '../../../../control/taskmanager/health-policy.js';

function withClock(opts: HealthPolicyOptions = {}) {
  const clock = { t: 1_000_000 };
  const health = new ExecutorHealth(opts, () => clock.t);
  return { clock, health };
}

const unanswered = { kind: 'unanswered', reason: 'ECONNREFUSED' } as const;

test('restart delays double from initialMs and stay at maxMs', (t) => {
  const delays = Array.from({ length: 8 }, (_, n) => restartDelayMs(n, { initialMs: 250, maxMs: 10_000 }));
  t.deepEqual(delays, [250, 500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
});

test('a huge restart count still gives the bounded delay', (t) => {
  t.is(restartDelayMs(10_000, { initialMs: 250, maxMs: 10_000 }), 10_000);
});

test('each failure of an executor that never became stable waits twice as long as the one before', (t) => {
  const { clock, health } = withClock({ initialMs: 100, maxMs: 1_000, stableAfterMs: 30_000 });
  health.ready();
  const delays: number[] = [];
  for (let i = 0; i < 6; i++) {
    clock.t += 5_000; // ready for 5 s each time: not stable
    delays.push(health.failed());
    health.ready();
  }
  t.deepEqual(delays, [100, 200, 400, 800, 1_000, 1_000]);
});

test('restarts that fail without the executor ever becoming ready keep backing off', (t) => {
  const { health } = withClock({ initialMs: 100, maxMs: 10_000 });
  t.deepEqual([health.failed(), health.failed(), health.failed()], [100, 200, 400]);
});

test('an executor ready for stableAfterMs starts its backoff over', (t) => {
  const { clock, health } = withClock({ initialMs: 100, maxMs: 10_000, stableAfterMs: 30_000 });
  health.ready();
  t.deepEqual([health.failed(), health.failed(), health.failed()], [100, 200, 400]);
  health.ready();
  clock.t += 30_000;
  t.is(health.failed(), 100);
});

test('an executor that answers its probe with an error is unhealthy at once, with the code in the reason', (t) => {
  const { health } = withClock();
  health.ready();
  t.is(health.observe({ kind: 'ok' }), undefined);
  t.is(health.observe({ kind: 'failed', reason: 'GET /health answered 503 EXECUTOR_ENGINE_DEAD' }), 'GET /health answered 503 EXECUTOR_ENGINE_DEAD');
});

test('unanswered probes make an executor unhealthy only when unansweredLimit of them come in a row', (t) => {
  const { health } = withClock({ unansweredLimit: 3 });
  health.ready();
  t.is(health.observe(unanswered), undefined);
  t.is(health.observe(unanswered), undefined);
  t.is(health.observe({ kind: 'ok' }), undefined); // the count starts over
  t.is(health.observe(unanswered), undefined);
  t.is(health.observe(unanswered), undefined);
  t.regex(health.observe(unanswered) ?? '', /3 health probes in a row got no answer \(last: ECONNREFUSED\)/);
});

test('a restarted executor starts with no unanswered probes counted', (t) => {
  const { health } = withClock({ unansweredLimit: 2 });
  health.ready();
  t.is(health.observe(unanswered), undefined);
  health.failed();
  health.ready();
  t.is(health.observe(unanswered), undefined);
});
