import test from 'ava';
import { deadlineTimer, sleep, withDeadline } from '../../../lib/wait.js';

test('a deadline timer fires once its deadline has passed', async (t) => {
  const deadline = Date.now() + 30;
  const firedAt = await new Promise<number>((resolve) => deadlineTimer(deadline, () => resolve(Date.now())));
  t.true(firedAt >= deadline - 1); // setTimeout may round down by a millisecond
});

test('a deadline beyond setTimeout range (30 days) does not fire at once', async (t) => {
  let fired = false;
  const timer = deadlineTimer(Date.now() + 30 * 24 * 3600_000, () => { fired = true; });
  await new Promise((r) => setTimeout(r, 50));
  timer.clear();
  t.false(fired);
});

test('a cleared deadline timer never fires', async (t) => {
  let fired = false;
  deadlineTimer(Date.now() + 10, () => { fired = true; }).clear();
  await new Promise((r) => setTimeout(r, 50));
  t.false(fired);
});

test('withDeadline with a deadline beyond setTimeout range (30 days) waits for the promise', async (t) => {
  t.is(await withDeadline('a slow step', sleep(50).then(() => 'done'), Date.now() + 30 * 24 * 3600_000), 'done');
});
