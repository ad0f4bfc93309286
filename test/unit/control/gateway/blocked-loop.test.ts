import test from 'ava';
import { BlockedLoopWatch } from '../../../../control/gateway/blocked-loop.js';

const limits = { limitMs: 2_000, tickMs: 500 };

/** Ticks every tickMs from `from` to `to` (inclusive), answering when `answers(t)`; returns the first kill time. */
function run(watch: BlockedLoopWatch, from: number, to: number, answers: (t: number) => boolean): number | undefined {
  for (let t = from; t <= to; t += limits.tickMs) {
    if (answers(t)) watch.answered(t);
    if (watch.tick(t).kill) return t;
  }
  return undefined;
}

test('a function that answers every probe is never killed', (t) => {
  const watch = new BlockedLoopWatch(limits, 0);
  t.is(run(watch, 500, 60_000, () => true), undefined);
});

test('a function silent for longer than the limit is killed, not before', (t) => {
  const watch = new BlockedLoopWatch(limits, 0);
  // Answers until 10 s, then goes silent: killed at the first tick past 12 s.
  t.is(run(watch, 500, 60_000, (now) => now <= 10_000), 12_500);
});

test('a late answer resets the silence: a busy but live loop is not killed', (t) => {
  const watch = new BlockedLoopWatch(limits, 0);
  // Silent for 1.5 s out of every 2 s (each silence shorter than the limit).
  t.is(run(watch, 500, 60_000, (now) => now % 2_000 === 0), undefined);
});

test("the watcher's own stall is not blamed on the function", (t) => {
  const watch = new BlockedLoopWatch(limits, 0);
  watch.answered(500);
  t.false(watch.tick(500).kill);
  // The gateway's loop did not run for 10 s (no tick, no probe answer could be seen): not a verdict on the function.
  const after = watch.tick(10_500);
  t.false(after.kill);
  t.true(after.blockedMs < limits.limitMs);
  // But a function that stays silent afterwards is killed once the limit passes in watcher time.
  t.is(run(watch, 11_000, 30_000, () => false), 12_500);
});
