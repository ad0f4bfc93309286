/** POST /tasks/invoke joins the gateway's drain: a direct task-graph call in flight at shutdown is counted and finishes. */
import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { echoAppSource, startPlatform } from '../../helpers/platform.js';

test('a task graph in flight when the platform stops is counted in the drain and answered', async (t) => {
  const p = await startPlatform({ drainTimeoutMs: 60_000 });
  t.teardown(() => p.stop());
  await p.register(echoAppSource('slow', 2_000));
  const [task] = await p.store.listTasks();
  const graph = {
    invocations: [{ task_class: 'EchoTask', task: { id: 't1', descriptor: null, config: (task!.task as { config: unknown }).config }, input: { text: 'drained' }, output: { echo: '' } }],
    is_streaming: false,
  };
  const reply = fetch(`${p.gatewayUrl}/tasks/invoke`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(graph) });
  await waitUntil('the graph reached the executor', async () => (await p.store.listExecutors()).some((e) => e.outstanding > 0), { timeoutMs: 60_000 });
  t.is(p.apps.inFlight(), 1);
  const stopped = p.stop();
  const res = await reply;
  t.is(res.status, 200);
  t.deepEqual(await res.json(), [{ echo: 'drained' }]);
  await stopped;
});
