import test from 'ava';
import { SessionTable } from '../../../../control/gateway/sessions/table.js';

test('a session silent for longer than the timeout is expired, one heard from in time is not', (t) => {
  const table = new SessionTable(1_000);
  table.open('quiet', 0);
  table.open('chatty', 0);
  t.true(table.touch('chatty', 900));
  t.deepEqual(table.expired(1_500), ['quiet']);
});

test('touching an unknown or removed session reports false', (t) => {
  const table = new SessionTable(1_000);
  t.false(table.touch('nobody', 0));
  table.open('gone', 0);
  table.remove('gone');
  t.false(table.touch('gone', 1));
});

test('a late touch with an older clock reading does not move the last-seen time back', (t) => {
  const table = new SessionTable(1_000);
  table.open('s', 500);
  table.touch('s', 100);
  t.deepEqual(table.expired(1_400), []);
});
