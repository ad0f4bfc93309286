import test from 'ava';
import { WorkerPool } from '../../../../executors/common/worker-pool.js';
import { tensor, type Item } from '../../../../lib/executor-protocol.js';
import { logger } from '../../../../lib/log.js';

const SCRIPT = new URL('./fixtures/sum-worker.ts', import.meta.url);
const log = logger('test');
const item = (id: string, xs: number[], meta: Record<string, unknown> = {}): Item =>
  ({ id, meta, tensors: { x: tensor('float32', [xs.length], Float32Array.from(xs)) } });

test('two workers all-reduce their contributions; the job answers the leader\'s results', async (t) => {
  const pool = await WorkerPool.start({ script: SCRIPT, size: 2, log });
  t.teardown(() => pool.close());
  const [r] = await pool.run({}, [item('a', [1, 2, 3])]);
  t.true(r!.ok);
  t.is(r!.meta!.rank, 0);
  t.deepEqual([...(r!.tensors!.sum!.data as Float32Array)], [3, 6, 9]); // x·1 + x·2
});

test('vectors longer than an all-reduce slot go through in several steps', async (t) => {
  const pool = await WorkerPool.start({ script: SCRIPT, size: 2, reduceSlotFloats: 4, log });
  t.teardown(() => pool.close());
  const xs = Array.from({ length: 37 }, (_, i) => i);
  const [r] = await pool.run({}, [item('a', xs), item('b', [5])]);
  t.deepEqual([...(r!.tensors!.sum!.data as Float32Array)], xs.map((x) => 3 * x));
});

test('a job failing on every rank rejects with the worker\'s error code', async (t) => {
  const pool = await WorkerPool.start({ script: SCRIPT, size: 1, log });
  t.teardown(() => pool.close());
  const err = await t.throwsAsync(pool.run({ fail: 'throw' }, [item('a', [1])]));
  t.is((err as { code?: string }).code, 'MODEL_INPUT_CORRUPT');
  t.is((err as { status?: number }).status, 422);
});

test('a rank failing mid-job releases the other rank, and the next job runs on a reset all-reduce', async (t) => {
  const pool = await WorkerPool.start({ script: SCRIPT, size: 2, log });
  t.teardown(() => pool.close());
  const err = await t.throwsAsync(pool.run({ fail: 'rank1' }, [item('a', [1])]));
  t.is((err as { code?: string }).code, 'MODEL_RUN_FAILED');
  const [r] = await pool.run({}, [item('b', [2])]);
  t.deepEqual([...(r!.tensors!.sum!.data as Float32Array)], [6]);
});

test("a job's error is the failing rank's own, even when the rank it aborted reports first", async (t) => {
  const pool = await WorkerPool.start({ script: SCRIPT, size: 2, log });
  t.teardown(() => pool.close());
  const err = await t.throwsAsync(pool.run({ fail: 'rank1-late' }, [item('a', [1])]));
  t.is((err as { code?: string }).code, 'MODEL_RUN_FAILED');
  t.regex(err!.message, /rank 1 failed late/);
});

test('a worker that dies fails its pending job with EXECUTOR_WORKER_DIED and marks the pool dead', async (t) => {
  const pool = await WorkerPool.start({ script: SCRIPT, size: 2, log });
  t.teardown(() => pool.close());
  const err = await t.throwsAsync(pool.run({ fail: 'exit' }, [item('a', [1])]));
  t.is((err as { code?: string }).code, 'EXECUTOR_WORKER_DIED');
  t.is((await pool.dead).code, 'EXECUTOR_WORKER_DIED');
  t.false(pool.alive);
});

test('a worker whose model fails to load makes start fail with that error', async (t) => {
  const err = await t.throwsAsync(WorkerPool.start({ script: SCRIPT, size: 2, workerData: { failInit: true }, log }));
  t.regex(err!.message, /no such model/);
});

test('a job deferred on I/O does not hold up the next job, and still answers its results', async (t) => {
  const pool = await WorkerPool.start({ script: SCRIPT, size: 2, log });
  t.teardown(() => pool.close());
  const order: string[] = [];
  const slow = pool.run({ deferMs: 3_000 }, [item('slow', [1])]).then((r) => { order.push('slow'); return r; });
  const fast = pool.run({}, [item('fast', [1])]).then((r) => { order.push('fast'); return r; });
  const [s] = await slow;
  await fast;
  t.deepEqual(order, ['fast', 'slow']);
  t.deepEqual([...(s!.tensors!.sum!.data as Float32Array)], [3]);
});
