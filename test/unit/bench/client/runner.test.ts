import test from 'ava';
import { startRun } from '../../../../bench/client/runner.js';
import type { Measured, SendOptions, Target } from '../../../../bench/client/senders.js';
import { arrivalTimesMs } from '../../../../bench/workload/arrivals.js';
import { RandomSource } from '../../../../bench/workload/random.js';
import { waitUntil } from '../../../../lib/wait.js';

const OK: Measured = { ok: true, status: 200, ttftMs: 1, e2elMs: 2, itlMs: [], outputTokens: 1 };

/** A target whose requests finish only when released (or fail when their signal aborts); counts concurrency. */
function heldTarget() {
  const releases: Array<() => void> = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const target: Target = {
    send(_body, o: SendOptions = {}) {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      return new Promise<Measured>((resolve) => {
        const finish = (m: Measured) => { inFlight--; resolve(m); };
        releases.push(() => finish(OK));
        o.signal?.addEventListener('abort', () => finish({ ok: false, status: 0, errorCode: o.abortCode?.() ?? 'CANCELLED', itlMs: [], outputTokens: 0 }), { once: true });
      });
    },
  };
  return { target, releases, max: () => maxInFlight };
}

const base = (target: Target, count: number) => ({
  target,
  arrivals: arrivalTimesMs({ rate: Infinity, burstiness: 1, pattern: { kind: 'constant' } }, new RandomSource(0)),
  request: (i: number) => ({ index: i, kind: 'text' as const, body: { i }, inputTokens: 1 }),
  limit: { count },
  requestTimeoutMs: 60_000,
  drainTimeoutMs: 60_000,
});

test('sending is open-loop: requests go out on schedule while earlier ones are still unanswered', async (t) => {
  const h = heldTarget();
  const run = startRun(base(h.target, 20));
  await waitUntil('all 20 sent', () => run.sent() === 20, { timeoutMs: 30_000 });
  t.is(run.inFlight(), 20);
  h.releases.forEach((r) => r());
  const out = await run.done;
  t.is(out.records.length, 20);
  t.deepEqual(out.records.map((r) => r.index), [...Array(20).keys()]);
});

test('--max-concurrency holds requests back until a slot frees', async (t) => {
  const h = heldTarget();
  const run = startRun({ ...base(h.target, 10), maxConcurrency: 3 });
  await waitUntil('3 sent', () => run.sent() === 3, { timeoutMs: 30_000 });
  for (let released = 0; released < 10; released++) {
    await waitUntil('a request waiting to be released', () => h.releases.length > released, { timeoutMs: 30_000 });
    h.releases[released]!();
  }
  const out = await run.done;
  t.is(out.records.length, 10);
  t.is(h.max(), 3);
});

test('stop() sends nothing more, waits for the requests in flight within the bound, then records them as cancelled', async (t) => {
  const h = heldTarget();
  const run = startRun({ ...base(h.target, 1000), maxConcurrency: 4, drainTimeoutMs: 200 });
  await waitUntil('4 sent', () => run.sent() === 4, { timeoutMs: 30_000 });
  h.releases[0]!(); // one finishes normally
  await waitUntil('a fifth sent', () => run.sent() === 5, { timeoutMs: 30_000 });
  run.stop();
  const out = await run.done;
  t.true(out.interrupted);
  t.is(out.records.length, 5, 'every request sent is recorded, none after stop()');
  t.is(out.records.filter((r) => r.ok).length, 1);
  t.deepEqual([...new Set(out.records.filter((r) => !r.ok).map((r) => r.errorCode))], ['CANCELLED']);
});

test('a duration ends a closed-loop run (infinite rate, capped concurrency) by the clock', async (t) => {
  const quick: Target = { send: () => new Promise((r) => setTimeout(() => r(OK), 5)) };
  const run = startRun({ ...base(quick, 0), limit: { durationMs: 300 }, maxConcurrency: 2 });
  const out = await run.done;
  t.true(out.records.length > 0);
  t.true(out.records.every((r) => r.ok));
});
