import test from 'ava';
import { ConcurrencySlots } from '../../../../executors/echo/slots.js';

test('slots grant at most the limit at once and the waiters in arrival order', async (t) => {
  const slots = new ConcurrencySlots(2);
  const granted: number[] = [];
  const all = [0, 1, 2, 3, 4].map((i) => slots.acquire().then(() => granted.push(i)));
  await Promise.resolve();
  await Promise.resolve();
  t.deepEqual(granted, [0, 1]);
  t.is(slots.queued, 3);
  slots.release();
  await Promise.resolve();
  t.deepEqual(granted, [0, 1, 2]);
  slots.release();
  slots.release();
  await Promise.all(all);
  t.deepEqual(granted, [0, 1, 2, 3, 4]);
  t.is(slots.active, 2);
});

test('a waiter whose caller aborts leaves the queue and does not take a slot', async (t) => {
  const slots = new ConcurrencySlots(1);
  await slots.acquire();
  const gone = new AbortController();
  const abandoned = slots.acquire(gone.signal);
  const next = slots.acquire();
  gone.abort(new Error('client went away'));
  await t.throwsAsync(abandoned, { message: 'client went away' });
  t.is(slots.queued, 1);
  slots.release();
  await next;
  t.is(slots.active, 1);
});

test('a limit below 1 is refused', (t) => {
  t.throws(() => new ConcurrencySlots(0), { instanceOf: RangeError });
});
