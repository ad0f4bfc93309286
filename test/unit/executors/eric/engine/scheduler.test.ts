import test from 'ava';
import { Scheduler, type Batch } from '../../../../../policies/eric-scheduler.js';
import type { Item } from '../../../../../lib/executor-protocol.js';

const item = (id: string, modality: string, modelId = 'm1'): Item => ({ id, meta: { modality, modelId }, tensors: {} });
const request = (requestId: string, items: Item[]) => ({ requestId, deadline: Date.now() + 60_000, items });
const ok = (id: string) => ({ id, ok: true });

/** Marks a batch's items done (the reference's process_batch_result). */
function finish(s: Scheduler, b: Batch): void {
  for (const e of b.entries) s.complete(e.requestId, ok(e.item.id));
}
const shape = (b: Batch) => ({ modality: b.modality, modelId: b.modelId, requestIds: b.entries.map((e) => e.requestId) });

// Port of the reference's tests/task_executors/eric/engine/test_scheduler.py::test_uniform_modality_and_adapter
test('batches only hold one modality and one adapter, stopping at the first mismatch', (t) => {
  const s = new Scheduler();
  s.enqueue(request('1', [item('im1', 'image'), item('im2', 'image')]));
  s.enqueue(request('2', [item('vid1', 'video'), item('im3', 'image')]));
  s.enqueue(request('3', [item('vid2', 'video'), item('vid3', 'video')]));
  s.enqueue(request('4', [item('vid4', 'video', 'm2'), item('vid5', 'video')]));
  const expected = [
    { modality: 'image', modelId: 'm1', requestIds: ['1', '1'] },
    { modality: 'video', modelId: 'm1', requestIds: ['2'] },
    { modality: 'image', modelId: 'm1', requestIds: ['2'] },
    { modality: 'video', modelId: 'm1', requestIds: ['3', '3'] },
    { modality: 'video', modelId: 'm2', requestIds: ['4'] },
    { modality: 'video', modelId: 'm1', requestIds: ['4'] },
  ];
  for (const want of expected) {
    t.true(s.hasWaiting());
    const b = s.schedule()!;
    t.deepEqual(shape(b), want);
    finish(s, b);
  }
  t.false(s.hasWaiting());
  t.is(s.size, 0);
});

// The reference's test_max_batch_size: the cap applies across requests; the rest waits for the next batch.
test('a batch holds at most max_batch_size items, continuing across requests', (t) => {
  const s = new Scheduler(2);
  s.enqueue(request('1', [item('a', 'image'), item('b', 'image'), item('c', 'image')]));
  s.enqueue(request('2', [item('d', 'image'), item('e', 'image')]));
  const sizes: string[][] = [];
  for (let b = s.schedule(); b; b = s.schedule()) {
    sizes.push(b.entries.map((e) => e.item.id));
    finish(s, b);
  }
  t.deepEqual(sizes, [['a', 'b'], ['c', 'd'], ['e']]);
});

test('without max_batch_size every consecutive matching item joins one batch', (t) => {
  const s = new Scheduler();
  for (let r = 0; r < 5; r++) s.enqueue(request(`r${r}`, [item(`i${r}`, 'image')]));
  t.is(s.schedule()!.entries.length, 5);
});

test('running items are skipped: the next batch starts at the first waiting item', (t) => {
  const s = new Scheduler(1);
  s.enqueue(request('1', [item('a', 'image'), item('b', 'image')]));
  t.is(s.schedule()!.entries[0]!.item.id, 'a');
  t.is(s.schedule()!.entries[0]!.item.id, 'b');
  t.is(s.schedule(), undefined);
});

test('a request completes once all its items are done, with results in item order', (t) => {
  const s = new Scheduler();
  s.enqueue(request('1', [item('a', 'image'), item('b', 'image')]));
  s.schedule();
  t.is(s.complete('1', ok('b')), undefined);
  const done = s.complete('1', ok('a'));
  t.deepEqual(done?.results.map((r) => r.id), ['a', 'b']);
});

test('a dropped request\'s waiting items are never scheduled', (t) => {
  const s = new Scheduler();
  s.enqueue(request('1', [item('a', 'image')]));
  s.enqueue(request('2', [item('b', 'image')]));
  t.true(s.drop('1'));
  t.deepEqual(s.schedule()!.entries.map((e) => e.item.id), ['b']);
});

test('requests past their deadline with waiting items are expired', (t) => {
  const s = new Scheduler();
  s.enqueue({ requestId: 'old', deadline: 1000, items: [item('a', 'image')] });
  s.enqueue(request('new', [item('b', 'image')]));
  t.deepEqual(s.expire(2000).map((r) => r.requestId), ['old']);
  t.deepEqual(s.schedule()!.entries.map((e) => e.requestId), ['new']);
});
