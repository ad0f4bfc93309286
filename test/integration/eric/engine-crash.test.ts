/** Eric's engine process dies: /health turns 503 and pending requests fail at once (not at their deadline). */
import test from 'ava';
import { TINY_A, dataUrl, startEric } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';
import { isAlive } from '../../helpers/repo.js';
import { waitUntil } from '../../../lib/wait.js';
import { ENGINE_HUNG_AFTER_ENV } from '../../../executors/common/engine-process.js';

test('an engine crash turns /health to 503 and fails pending requests with EXECUTOR_ENGINE_DEAD', async (t) => {
  const eric = await startEric({ modality: 'image' });
  t.teardown(() => eric.stop());
  const pid = (await eric.info()).engine.pid as number;
  t.true(isAlive(pid));
  const url = dataUrl('image/png', await makeImage(56, 56));
  process.kill(pid, 'SIGSTOP'); // frozen: the requests below stay pending in the router
  try {
    const deadline = String(Date.now() + 120_000);
    const pending = Array.from({ length: 3 }, (_, i) =>
      eric.embed([{ id: `crash-${i}`, modality: 'image', model_id: TINY_A, url }], { 'x-cornserve-deadline': deadline }));
    await waitUntil('requests in flight', async () => (await eric.info()).inflight === 3, { timeoutMs: 20_000 });
    process.kill(pid, 'SIGKILL');
    for (const res of await Promise.all(pending)) {
      t.is(res.status, 503);
      t.is(res.body.error.code, 'EXECUTOR_ENGINE_DEAD');
    }
  } finally {
    if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  }
  t.is(await eric.health(), 503);
  const later = await eric.embed([{ id: 'after', modality: 'image', model_id: TINY_A, url }]);
  t.is(later.status, 503);
});

test('stopping Eric stops its engine process', async (t) => {
  const eric = await startEric({ modality: 'image' });
  const pid = (await eric.info()).engine.pid as number;
  await eric.stop();
  await waitUntil('engine exit', () => !isAlive(pid), { timeoutMs: 30_000 });
  t.pass();
});

test('a stopped engine turns /health to 503 EXECUTOR_ENGINE_HUNG and fails requests with that code, not at their deadline', async (t) => {
  const eric = await startEric({ modality: 'image', env: { [ENGINE_HUNG_AFTER_ENV]: '2000' } });
  t.teardown(() => eric.stop());
  const pid = (await eric.info()).engine.pid as number;
  const url = dataUrl('image/png', await makeImage(56, 56));
  process.kill(pid, 'SIGSTOP'); // the process lives; only its silence on the heartbeat tells
  const res = await eric.embed([{ id: 'frozen', modality: 'image', model_id: TINY_A, url }], { 'x-cornserve-deadline': String(Date.now() + 150_000) });
  t.is(res.status, 503);
  t.is(res.body.error.code, 'EXECUTOR_ENGINE_HUNG');
  const health = await (await fetch(`${eric.url}/health`)).json() as { error: { code: string } };
  t.is(health.error.code, 'EXECUTOR_ENGINE_HUNG');
  await waitUntil('the hung engine killed', () => !isAlive(pid), { timeoutMs: 20_000 });
});
