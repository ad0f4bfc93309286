import test from 'ava';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PreprocessPool } from '../../../../executors/common/preprocess-pool.js';
import { logger } from '../../../../lib/log.js';
import { waitUntil } from '../../../../lib/wait.js';

const SCRIPT = new URL('./fixtures/upper-preprocess.ts', import.meta.url);
const log = logger('test');

let pool: PreprocessPool<string, Uint8Array>;
test.before(async () => { pool = await PreprocessPool.start({ script: SCRIPT, size: 2, workerData: { suffix: '!' }, log }); });
test.after.always(() => pool?.close());

const text = (b: Uint8Array) => new TextDecoder().decode(b);

test('a task runs on a thread with the pool\'s settings', async (t) => {
  t.is(text(await pool.run('abc')), 'ABC!');
});

test('an error from a thread keeps its code and status', async (t) => {
  const err = await t.throwsAsync(pool.run('bad'));
  t.is((err as { code?: string }).code, 'MODEL_INPUT_CORRUPT');
  t.is((err as { status?: number }).status, 422);
});

test('a thread that crashes fails only its own task and is replaced', async (t) => {
  const results = await Promise.allSettled([pool.run('crash'), pool.run('x'), pool.run('y')]);
  t.is(results[0]!.status, 'rejected');
  t.is(((results[0] as PromiseRejectedResult).reason as { code?: string }).code, 'EXECUTOR_PREPROCESS_CRASHED');
  t.deepEqual(results.slice(1).map((r) => text((r as PromiseFulfilledResult<Uint8Array>).value)), ['X!', 'Y!']);
  t.is(text(await pool.run('after')), 'AFTER!');
});

test('a task whose deadline is beyond setTimeout range (30 days) is not failed early', async (t) => {
  t.is(text(await pool.run('pause', { deadline: Date.now() + 30 * 24 * 3600_000 })), 'PAUSE!');
});

test('a task past its deadline fails with EXECUTOR_DEADLINE_EXCEEDED', async (t) => {
  const err = await t.throwsAsync(pool.run('slow', { deadline: Date.now() + 50 }));
  t.is((err as { code?: string }).code, 'EXECUTOR_DEADLINE_EXCEEDED');
});

test('a pool whose crashed thread cannot be replaced reports itself unhealthy', async (t) => {
  const marker = join(tmpdir(), `cornserve-preprocess-${process.pid}-${Date.now()}`);
  t.teardown(() => rmSync(marker, { force: true }));
  const own = await PreprocessPool.start<string, Uint8Array>({ script: SCRIPT, size: 1, workerData: { suffix: '!', failIfExists: marker }, log });
  t.teardown(() => own.close());
  t.true(own.healthy);
  writeFileSync(marker, '');
  await t.throwsAsync(own.run('crash'), { message: /exited with code 9/ });
  await waitUntil('the pool is short of its thread', () => !own.healthy, { timeoutMs: 30_000 });
  t.false(own.healthy);
});
