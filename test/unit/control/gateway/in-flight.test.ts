import test from 'ava';
import { InFlight } from '../../../../control/gateway/in-flight.js';

test('idle() resolves with 0 once every request of the key ended, whatever other keys hold', async (t) => {
  const f = new InFlight();
  const a1 = f.begin('a');
  const a2 = f.begin('a');
  f.begin('b');
  const idle = f.idle('a', Date.now() + 60_000);
  a1.end();
  a1.end(); // idempotent
  t.is(f.count('a'), 1);
  a2.end();
  t.is(await idle, 0);
  t.is(f.count(), 1);
});

test('idle() resolves with how many are left when its deadline passes', async (t) => {
  const f = new InFlight();
  f.begin('a');
  f.begin('b');
  t.is(await f.idle(undefined, Date.now() + 20), 2);
});

test('cut() aborts the tickets of the key with the reason, and only those', (t) => {
  const f = new InFlight();
  const a = f.begin('a');
  const b = f.begin('b');
  const reason = new Error('going away');
  t.is(f.cut('a', reason), 1);
  t.is(a.signal.reason, reason);
  t.false(b.signal.aborted);
  t.is(f.cut(undefined, reason), 1);
  t.true(b.signal.aborted);
});
