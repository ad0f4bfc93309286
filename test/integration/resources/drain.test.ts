/**
 * Scale-down drains: requests routed by the real dispatcher to an executor being removed finish normally,
 * and new requests go to the executors that stay.
 */
import test from 'ava';
import { TaskGraph } from '../../../functions/sdk/index.js';
import { dispatchGraph } from '../../../control/dispatcher/dispatch.js';
import { waitUntil } from '../../../lib/wait.js';
import { echoTask, startResourceManager } from '../../helpers/resources.js';
import { isAlive } from '../../helpers/repo.js';

const SLOW_MS = 1_500;
const call = (store: Parameters<typeof dispatchGraph>[2]['store'], text: string) =>
  dispatchGraph(new TaskGraph([{ task: echoTask(SLOW_MS), input: { text }, output: { echo: '' } }]), { deadline: Date.now() + 60_000 }, { store });

test.serial('in-flight requests on an executor being scaled away finish, and new ones go elsewhere', async (t) => {
  const { rm, store, platform } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(SLOW_MS)]);
  await rm.scale(id!, 1);
  const [oldest, newest] = await store.listExecutors(id);
  const oldestPid = platform.processes().find((p) => p.id === oldest!.executorId)!.pid;

  const inFlight = [call(store, 'a'), call(store, 'b')]; // least outstanding: one on each executor
  await waitUntil('both executors busy', async () => (await store.listExecutors(id)).every((r) => r.outstanding === 1));
  const scaled = rm.scale(id!, -1);
  await waitUntil('oldest draining', async () => (await store.getExecutor(oldest!.executorId))?.state === 'draining');
  const later = call(store, 'c');
  await waitUntil('the new request is on the remaining executor', async () => (await store.getExecutor(newest!.executorId))?.outstanding === 2);

  const results = await Promise.all([...inFlight, later]);
  t.deepEqual(results.map((r) => r.outputs), [[{ echo: 'a' }], [{ echo: 'b' }], [{ echo: 'c' }]]);
  await scaled; // its status is a snapshot taken when draining ended, possibly while 'c' still ran: read the store now
  t.deepEqual((await store.listExecutors(id)).map((e) => [e.executorId, e.outstanding]), [[newest!.executorId, 0]]);
  t.false(isAlive(oldestPid));
});
