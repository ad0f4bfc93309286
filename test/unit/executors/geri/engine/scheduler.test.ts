/**
 * Geri's scheduler. The first 14 tests port the reference's tests/task_executors/geri/test_engine_scheduler.py
 * one for one (same names, same cases); the rest cover the audio rule and what the port adds (cancel, expiry).
 */
import test from 'ava';
import { RequestQueue, type ScheduledRequest, Scheduler, SchedulerBatch } from '../../../../../policies/geri-scheduler.js';

const FAR = Date.now() + 3_600_000;

/** An image request (the reference's ImageEngineRequest / ScheduledImageRequest). */
const img = (requestId: string, embeddingDataId: string, height: number, width: number, numInferenceSteps: number, skipTokens = 0): ScheduledRequest => ({
  requestId, embeddingDataId, deadline: FAR, params: { kind: 'image', height, width, numInferenceSteps, skipTokens },
});
const audio = (requestId: string, chunkSize?: number, leftContextSize?: number): ScheduledRequest => ({
  requestId, embeddingDataId: `e-${requestId}`, deadline: FAR,
  params: { kind: 'audio', ...(chunkSize !== undefined ? { chunkSize } : {}), ...(leftContextSize !== undefined ? { leftContextSize } : {}) },
});

// ---- the reference's 14 ----

test('test_scheduler_batch_validation: a batch of compatible requests exposes its ids and parameters', (t) => {
  const batch = new SchedulerBatch([img('req1', 'embed1', 256, 256, 10), img('req2', 'embed2', 256, 256, 10)]);
  t.is(batch.length, 2);
  t.deepEqual(batch.requestIds, ['req1', 'req2']);
  t.deepEqual(batch.embeddingDataIds, ['embed1', 'embed2']);
  t.deepEqual(batch.params, { kind: 'image', height: 256, width: 256, numInferenceSteps: 10, skipTokens: 0 });
});

test('test_scheduler_batch_validation_error: a batch with different generation parameters is refused', (t) => {
  t.throws(() => new SchedulerBatch([img('req1', 'embed1', 256, 256, 10), img('req2', 'embed2', 256, 512, 10)]), {
    instanceOf: RangeError, message: /identical generation parameters/,
  });
});

test('test_request_queue_enqueue_and_length: the queue counts what was enqueued', (t) => {
  const q = new RequestQueue();
  t.is(q.length, 0);
  t.false(q.hasRequests());
  q.enqueue(img('test-123', 'embed-456', 512, 512, 20));
  t.is(q.length, 1);
  t.true(q.hasRequests());
});

test('test_request_queue_fcfs_ordering: the next batch is built around the oldest request', (t) => {
  const q = new RequestQueue();
  q.enqueue(img('req1', 'embed1', 512, 512, 20));
  q.enqueue(img('req2', 'embed2', 256, 256, 10));
  q.enqueue(img('req3', 'embed3', 256, 256, 10));
  t.is(q.length, 3);
  const next = q.peekNext()!;
  t.is(next.requestId, 'req1');
  t.like(next.params, { height: 512, width: 512, numInferenceSteps: 20 });
});

test('test_request_queue_pop_batch_consecutive: popping takes consecutive matches up to the cap', (t) => {
  const q = new RequestQueue();
  for (let i = 0; i < 3; i++) q.enqueue(img(`req${i}`, `embed${i}`, 256, 256, 10));
  const popped = q.popBatch(q.peekNext()!, 2);
  t.deepEqual(popped.map((r) => r.requestId), ['req0', 'req1']);
  t.is(q.length, 1);
});

test('test_request_queue_pop_batch_nonexistent: popping parameters the head does not have takes nothing', (t) => {
  const q = new RequestQueue();
  q.enqueue(img('req1', 'embed1', 256, 256, 10));
  t.deepEqual(q.popBatch(img('req2', 'embed1', 512, 512, 20)), []);
  t.is(q.length, 1);
});

test('test_request_queue_pop_batch_fcfs_stops_at_mismatch: a different request blocks later matching ones', (t) => {
  const q = new RequestQueue();
  q.enqueue(img('req1', 'embed1', 256, 256, 10));
  q.enqueue(img('req2', 'embed2', 512, 512, 20));
  q.enqueue(img('req3', 'embed3', 256, 256, 10));
  const popped = q.popBatch(q.peekNext()!);
  t.deepEqual(popped.map((r) => r.requestId), ['req1']);
  t.is(q.length, 2);
});

test('test_scheduler_enqueue: an enqueued request is waiting', (t) => {
  const s = new Scheduler(4);
  t.false(s.hasWaiting());
  s.enqueue(img('req1', 'embed1', 256, 256, 10));
  t.true(s.hasWaiting());
});

test('test_scheduler_schedule_empty: nothing waiting schedules nothing', (t) => {
  t.is(new Scheduler().schedule(), undefined);
});

test('test_scheduler_schedule_single_request: one request makes a batch of one with its parameters', (t) => {
  const s = new Scheduler();
  s.enqueue(img('req1', 'embed1', 512, 256, 15));
  const b = s.schedule()!;
  t.is(b.length, 1);
  t.deepEqual(b.requestIds, ['req1']);
  t.like(b.params, { height: 512, width: 256, numInferenceSteps: 15 });
});

test('test_scheduler_schedule_batch: max_batch_size splits a run of same-parameter requests', (t) => {
  const s = new Scheduler(3);
  for (let i = 0; i < 5; i++) s.enqueue(img(`req${i}`, `embed${i}`, 128, 128, 5));
  t.deepEqual(s.schedule()!.requestIds, ['req0', 'req1', 'req2']);
  t.deepEqual(s.schedule()!.requestIds, ['req3', 'req4']);
  t.is(s.schedule(), undefined);
});

test('test_scheduler_schedule_different_params_fcfs: alternating parameters run one by one in arrival order', (t) => {
  const s = new Scheduler();
  s.enqueue(img('req1', 'embed1', 256, 256, 10));
  s.enqueue(img('req2', 'embed2', 512, 512, 20));
  s.enqueue(img('req3', 'embed3', 256, 256, 10));
  const order = [s.schedule()!, s.schedule()!, s.schedule()!].map((b) => ({ ids: b.requestIds, params: b.params }));
  t.deepEqual(order.map((b) => b.ids), [['req1'], ['req2'], ['req3']]);
  t.deepEqual(order.map((b) => b.params.kind === 'image' && [b.params.height, b.params.width]), [[256, 256], [512, 512], [256, 256]]);
});

test('test_scheduler_schedule_consecutive_same_params: consecutive same-parameter requests form one batch', (t) => {
  const s = new Scheduler();
  for (const id of ['req1', 'req2', 'req3']) s.enqueue(img(id, `e-${id}`, 256, 256, 10));
  const b = s.schedule()!;
  t.deepEqual(b.requestIds, ['req1', 'req2', 'req3']);
  t.like(b.params, { height: 256, width: 256, numInferenceSteps: 10 });
  t.is(s.schedule(), undefined);
});

test('test_scheduler_max_batch_size_none: without a cap every matching request joins the batch', (t) => {
  const s = new Scheduler(undefined);
  for (let i = 0; i < 10; i++) s.enqueue(img(`req${i}`, `embed${i}`, 64, 64, 1));
  t.is(s.schedule()!.length, 10);
  t.is(s.schedule(), undefined);
});

// ---- beyond the reference ----

test('skip_tokens does not split a batch (it is not a generation parameter)', (t) => {
  const s = new Scheduler();
  s.enqueue(img('a', 'ea', 64, 64, 2, 0));
  s.enqueue(img('b', 'eb', 64, 64, 2, 7));
  t.deepEqual(s.schedule()!.requestIds, ['a', 'b']);
});

test('audio requests batch when chunk and context sizes are equal, an unset size only with an unset one', (t) => {
  const s = new Scheduler();
  s.enqueue(audio('a', 10, 2));
  s.enqueue(audio('b', 10, 2));
  s.enqueue(audio('c'));
  s.enqueue(audio('d'));
  s.enqueue(audio('e', 50));
  t.deepEqual([s.schedule()!, s.schedule()!, s.schedule()!].map((b) => b.requestIds), [['a', 'b'], ['c', 'd'], ['e']]);
});

test('a batch refuses requests of two kinds', (t) => {
  t.throws(() => new SchedulerBatch([img('a', 'ea', 64, 64, 1), audio('b')]), { instanceOf: TypeError });
});

test('a batch refuses to be empty', (t) => {
  t.throws(() => new SchedulerBatch([]), { instanceOf: RangeError });
});

test('a dropped request leaves the queue and no longer splits its neighbours', (t) => {
  const s = new Scheduler();
  s.enqueue(img('a', 'ea', 64, 64, 1));
  s.enqueue(img('x', 'ex', 128, 128, 1));
  s.enqueue(img('b', 'eb', 64, 64, 1));
  t.true(s.drop('x'));
  t.false(s.drop('x'));
  t.deepEqual(s.schedule()!.requestIds, ['a', 'b']);
});

test('expire removes exactly the requests whose deadline passed', (t) => {
  const s = new Scheduler();
  s.enqueue({ ...img('old', 'e1', 64, 64, 1), deadline: 1_000 });
  s.enqueue(img('new', 'e2', 64, 64, 1));
  t.deepEqual(s.expire(2_000).map((r) => r.requestId), ['old']);
  t.deepEqual(s.schedule()!.requestIds, ['new']);
});

test('max_batch_size must be a positive integer', (t) => {
  t.throws(() => new Scheduler(0), { instanceOf: RangeError });
  t.throws(() => new Scheduler(1.5), { instanceOf: RangeError });
});
