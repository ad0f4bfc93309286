import test from 'ava';
import { pickLeastOutstanding } from '../../../policies/pick.js';
import { Scheduler } from '../../../policies/eric-scheduler.js';
import { RequestQueue } from '../../../policies/geri-scheduler.js';
import { admitCount } from '../../../policies/admission.js';
import { SimEncoder } from '../../../sim/executors/encoder.js';
import { SimGenerator } from '../../../sim/executors/generator.js';
import { IndependentDevice } from '../../../sim/engine/compute.js';
import { EventQueue } from '../../../sim/engine/queue.js';

test("the simulated encoder and generator hold the live schedulers' instances", (t) => {
  const events = new EventQueue();
  t.true(new SimEncoder('e', 0, events, new IndependentDevice(events), 'image', 4, { a: 1, b: 0, patchSize: 14, audioUnitsPerSecond: 50, bytesPerUnit: 0 }).scheduler instanceof Scheduler);
  t.true(new SimGenerator('g', 0, events, new IndependentDevice(events), 'image', { perStep: { a: 1, b: 0 }, steps: 2 }).queue instanceof RequestQueue);
});

test('the executor pick takes the least outstanding and rotates among ties', (t) => {
  const ex = [{ id: 'a', outstanding: 2 }, { id: 'b', outstanding: 1 }, { id: 'c', outstanding: 1 }];
  t.is(pickLeastOutstanding(ex, 0)!.id, 'b');
  t.is(pickLeastOutstanding(ex, 1)!.id, 'c');
  t.is(pickLeastOutstanding(ex, 2)!.id, 'b');
  t.is(pickLeastOutstanding([], 0), undefined);
});

test('admission stops at the slot limit and at the padded prefill budget', (t) => {
  const view = (n: number) => ({ n, needsSlot: true });
  const limits = { maxBatch: 4, maxPrefillTokens: 64, padMultiple: 16 };
  t.is(admitCount([8, 8, 8, 8, 8], 2, limits, view), 2, 'two free slots');
  t.is(admitCount([8, 8, 8, 8, 8], 0, limits, view), 4, '4 × 16 padded tokens fit in 64');
  t.is(admitCount([8, 40], 0, limits, view), 1, '2 × 48 padded tokens exceed 64');
});
