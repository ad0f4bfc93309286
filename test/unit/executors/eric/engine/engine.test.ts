import test from 'ava';
import { EricEngine } from '../../../../../executors/eric/engine/engine.js';
import { WorkerPool } from '../../../../../executors/common/worker-pool.js';
import type { EngineInbound, ItemResult } from '../../../../../lib/executor-protocol.js';
import type { WireError } from '../../../../../lib/executor-errors.js';
import { logger } from '../../../../../lib/log.js';
import { waitUntil } from '../../../../../lib/wait.js';

const log = logger('test');
let pool: WorkerPool;
test.before(async () => { pool = await WorkerPool.start({ script: new URL('./fixtures/poison-worker.ts', import.meta.url), size: 1, log }); });
test.after.always(() => pool?.close());

interface Answer { items: readonly ItemResult[]; error?: WireError }

/** An engine over the real worker pool whose answers are recorded by request id. */
function engine(maxInflightBatches: number) {
  const answers = new Map<string, Answer>();
  const e = new EricEngine(pool, { respond: async (id, items, error) => { answers.set(id, { items, ...(error ? { error } : {}) }); } }, { log, maxInflightBatches });
  const h = e.handlers();
  const enqueue = (requestId: string, items: { id: string; poison?: boolean }[], deadline = Date.now() + 30_000) => {
    const msg: Extract<EngineInbound, { type: 'enqueue' }> = {
      type: 'enqueue', requestId, deadline, items: items.map((i) => ({ id: i.id, meta: { modality: 'image', modelId: 'm', ...(i.poison ? { poison: true } : {}) }, tensors: {} })),
    };
    h.enqueue(msg, []);
  };
  return { e, answers, enqueue, answer: (id: string) => waitUntil(`answer to ${id}`, () => answers.get(id), { timeoutMs: 20_000 }) };
}

test('a batch that fails as a whole is retried item by item: only the bad item fails', async (t) => {
  const { e, enqueue, answer } = engine(1);
  t.teardown(() => e.close());
  enqueue('r1', [{ id: 'a' }]);
  enqueue('r2', [{ id: 'b' }, { id: 'c', poison: true }]);
  enqueue('r3', [{ id: 'd' }]);
  const [r1, r2, r3] = await Promise.all(['r1', 'r2', 'r3'].map(answer));
  t.true(r1!.items.every((i) => i.ok));
  t.deepEqual(r2!.items.map((i) => [i.id, i.ok]), [['b', true], ['c', false]]);
  t.is(r2!.items[1]!.error!.code, 'MODEL_RUN_FAILED');
  t.true(r3!.items.every((i) => i.ok));
});

test('consecutive requests of the same modality and adapter run as one batch', async (t) => {
  const { e, enqueue, answer } = engine(1);
  t.teardown(() => e.close());
  enqueue('q0', [{ id: 'x0' }]); // occupies the worker
  for (let i = 1; i <= 3; i++) enqueue(`q${i}`, [{ id: `x${i}` }]);
  const answers = await Promise.all(['q1', 'q2', 'q3'].map(answer));
  t.deepEqual(answers.map((a) => a!.items[0]!.meta!.batch), [['x1', 'x2', 'x3'], ['x1', 'x2', 'x3'], ['x1', 'x2', 'x3']]);
  t.is(answers[0]!.items[0]!.meta!.batchSize, 3);
});

test('a request whose deadline passes while queued is answered EXECUTOR_DEADLINE_EXCEEDED', async (t) => {
  const { e, enqueue, answer } = engine(1);
  t.teardown(() => e.close());
  enqueue('late', [{ id: 'z' }], Date.now() - 1);
  t.is((await answer('late'))!.error!.code, 'EXECUTOR_DEADLINE_EXCEEDED');
});

test('a cancelled request is never answered; the next one is', async (t) => {
  const { e, enqueue, answer, answers } = engine(1);
  t.teardown(() => e.close());
  enqueue('busy', [{ id: 'b0' }]);
  enqueue('gone', [{ id: 'g0' }]);
  e.handlers().cancel({ type: 'cancel', requestId: 'gone', reason: 'test' }, []);
  enqueue('next', [{ id: 'n0' }]);
  await answer('next');
  t.false(answers.has('gone'));
});
