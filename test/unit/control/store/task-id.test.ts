import test from 'ava';
import { createHash } from 'node:crypto';
import { taskIdFor } from '../../../../control/store/task-id.js';

test('taskIdFor is the lower-cased class and the first 12 hex of sha256(key)', (t) => {
  const key = 'EncoderTask|eric|{"model_id":"m1"}';
  const hash = createHash('sha256').update(key).digest('hex');
  t.is(taskIdFor('EncoderTask', key), `encodertask-${hash.slice(0, 12)}`);
});

test('taskIdFor gives the same id for the same key every time', (t) => {
  t.is(taskIdFor('LLMUnitTask', 'k'), taskIdFor('LLMUnitTask', 'k'));
});

test('taskIdFor gives different ids for different keys', (t) => {
  t.not(taskIdFor('LLMUnitTask', 'k1'), taskIdFor('LLMUnitTask', 'k2'));
});
