import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { echo } from '../../helpers/local-platform.js';
import { startEchoExecutor } from '../../helpers/executors.js';

test('an echo executor serves maxConcurrency requests at once and queues the rest', async (t) => {
  const ex = await startEchoExecutor({ serviceTimeMs: 4000, maxConcurrency: 2 });
  t.teardown(() => ex.stop());
  const replies = Promise.all([0, 1, 2].map((i) => echo(ex.url, `r${i}`, 4000)));
  const seen = await waitUntil('3 requests in the executor', async () => {
    const info = await ex.info();
    return info.inFlight === 3 ? info : undefined;
  }, { timeoutMs: 30_000, intervalMs: 20 });
  t.like(seen, { maxConcurrency: 2, queued: 1 });
  const done = await replies;
  t.deepEqual(done.map((r) => r.status), [200, 200, 200]);
  t.deepEqual(done.map((r) => r.body), [0, 1, 2].map((i) => ({ echo: `r${i}` })));
  t.like(await ex.info(), { queued: 0, inFlight: 0, served: 3 });
});
