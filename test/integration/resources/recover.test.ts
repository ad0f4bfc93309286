/**
 * Restarting the resource manager against the same Redis brings every deployed task back: a first
 * ResourceManager deploys and scales, its process "dies" (its children are killed, nothing is cleaned up in
 * the Store), a second one on a fresh platform recovers.
 */
import test from 'ava';
import { TaskGraph } from '../../../functions/sdk/index.js';
import { dispatchGraph } from '../../../control/dispatcher/dispatch.js';
import { RedisStore } from '../../../control/store/redis.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { echoTask, ownersPicture, startResourceManager } from '../../helpers/resources.js';

let redis: RedisServer;
test.before(async () => {
  redis = await startRedis();
});
test.after.always(async () => {
  await redis?.stop();
});

function redisStore(t: { teardown(fn: () => unknown): void }, prefix: string) {
  const store = new RedisStore({ url: redis.url, prefix });
  t.teardown(() => store.close());
  return store;
}

/** A first resource manager that deploys, then dies without cleaning up (like a killed `cornserve up`). */
async function deployAndDie(t: Parameters<typeof startResourceManager>[0], prefix: string) {
  // A dead process probes nothing: without this, the first manager's health probes would find its killed
  // executors and mark their routes failed in the shared Store while the second one recovers them.
  const first = startResourceManager(t, { store: redisStore(t, prefix), rm: { taskManager: { drainPollMs: 20, healthCheck: { intervalMs: 0 } } } });
  const [shared] = await first.rm.deploy([echoTask(0)]);
  await first.rm.deploy([echoTask(0), echoTask(1)]);
  await first.rm.scale(shared!, 1);
  const before = await first.rm.listTasks();
  await first.platform.shutdown(); // the children die with the old process; the Store keeps everything
  return { before, shared: shared! };
}

test.serial('a new resource manager on the same Redis brings back every task with its usage, devices and executors', async (t) => {
  const prefix = uniquePrefix('recover');
  const { before } = await deployAndDie(t, prefix);
  const second = startResourceManager(t, { store: redisStore(t, prefix) });
  const report = await second.rm.recover();
  t.deepEqual(report.recovered.sort(), before.map((s) => s.taskId).sort());
  t.deepEqual(report.failed, []);
  const after = await second.rm.listTasks();
  t.deepEqual(
    after.map((s) => [s.taskId, s.name, s.usage, s.state, s.devices, s.executors.map((e) => [e.executorId, e.state])]),
    before.map((s) => [s.taskId, s.name, s.usage, 'ready', s.devices, s.executors.map((e) => [e.executorId, 'ready'])]),
  );
  t.is(second.platform.processes().length, 3);
  t.is(ownersPicture(second.rm), '###.');
});

test.serial('recovered tasks serve requests through the dispatcher', async (t) => {
  const prefix = uniquePrefix('recover');
  await deployAndDie(t, prefix);
  const store = redisStore(t, prefix);
  const second = startResourceManager(t, { store });
  await second.rm.recover();
  const graph = new TaskGraph([
    { task: echoTask(0), input: { text: 'zero' }, output: { echo: '' } },
    { task: echoTask(1), input: { text: 'one' }, output: { echo: '' } },
  ]);
  const result = await dispatchGraph(graph, { deadline: Date.now() + 30_000 }, { store });
  t.deepEqual(result.outputs, [{ echo: 'zero' }, { echo: 'one' }]);
});

test.serial('after recovery, releases and teardown work as before the restart', async (t) => {
  const prefix = uniquePrefix('recover');
  const { shared } = await deployAndDie(t, prefix);
  const store = redisStore(t, prefix);
  const second = startResourceManager(t, { store });
  await second.rm.recover();
  await second.rm.release([shared]);
  t.like(await store.getTask(shared), { usage: 1, state: 'ready' });
  await second.rm.release([shared]);
  t.is(await store.getTask(shared), undefined);
  t.deepEqual(await store.listExecutors(shared), []);
  t.is(second.platform.processes().length, 1);
});

test.serial('recovery deletes a task that was being torn down when the old process died', async (t) => {
  const prefix = uniquePrefix('recover');
  const { shared } = await deployAndDie(t, prefix);
  const store = redisStore(t, prefix);
  await store.updateTask(shared, { state: 'tearing down' });
  const second = startResourceManager(t, { store });
  const report = await second.rm.recover();
  t.deepEqual(report.removed, [shared]);
  t.is(await store.getTask(shared), undefined);
  t.deepEqual(await store.listExecutors(shared), []);
});

test.serial('a task scaled to zero stays at zero after recovery, and scales up from there', async (t) => {
  const prefix = uniquePrefix('recover');
  const store = redisStore(t, prefix);
  const first = startResourceManager(t, { store });
  const [id] = await first.rm.deploy([echoTask(0)]);
  await first.rm.scale(id!, -1);
  await first.platform.shutdown();
  const second = startResourceManager(t, { store: redisStore(t, prefix) });
  const report = await second.rm.recover();
  t.deepEqual(report.recovered, [id]);
  t.like(await store.getTask(id!), { state: 'ready', usage: 1, devices: [] });
  t.deepEqual(second.platform.processes(), []);
  const status = await second.rm.scale(id!, 1);
  t.deepEqual(status.executors.map((e) => e.state), ['ready']);
});
