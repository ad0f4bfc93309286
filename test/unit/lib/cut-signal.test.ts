import test from 'ava';
import { Cut } from '../../../lib/cut-signal.js';

test('a cut runs its listeners once, in the order added, with its reason set', (t) => {
  const cut = new Cut();
  const seen: string[] = [];
  cut.addEventListener('abort', () => seen.push(`a:${String(cut.reason)}`));
  cut.addEventListener('abort', () => seen.push(`b:${String(cut.aborted)}`));
  cut.abort('first');
  cut.abort('second');
  t.deepEqual(seen, ['a:first', 'b:true']);
  t.is(cut.reason, 'first');
});

test('a removed listener does not run, and one added after the abort never runs', (t) => {
  const cut = new Cut();
  let removed = 0;
  let late = 0;
  const listener = () => removed++;
  cut.addEventListener('abort', listener);
  cut.removeEventListener('abort', listener);
  cut.abort(new Error('x'));
  cut.addEventListener('abort', () => late++);
  t.deepEqual([removed, late], [0, 0]);
});

test('the AbortSignal of a cut aborts with it, whether it was asked for before or after the abort', (t) => {
  const before = new Cut();
  const signal = before.abortSignal;
  t.false(signal.aborted);
  const reason = new Error('gone');
  before.abort(reason);
  t.true(signal.aborted);
  t.is(signal.reason, reason);
  t.is(before.abortSignal, signal); // made once

  const after = new Cut();
  after.abort(reason);
  t.true(after.abortSignal.aborted);
  t.is(after.abortSignal.reason, reason);
});
