/**
 * ResourceManager.adopt(): a new resource manager takes over executors a previous one started, without
 * restarting them. The "previous manager" is played by the test: real echo executors started through the
 * same LocalPlatform (which, like KubernetesPlatform after reconcile, knows them and reports their exits),
 * and the task record and routes written to the Store the way a task manager writes them.
 */
import test from 'ava';
import { taskIdOf } from '../../../control/store/task-id.js';
import type { ExecutorRoute, Store } from '../../../lib/store.js';
import { newTaskRecord } from '../../../control/resources/task-records.js';
import { waitHealthy } from '../../../control/taskmanager/health.js';
import type { UnitTask } from '../../../functions/sdk/index.js';
import { waitUntil } from '../../../lib/wait.js';
import { dev, echo, type QuietPlatform } from '../../helpers/local-platform.js';
import { echoTask, startResourceManager, testDescriptors } from '../../helpers/resources.js';

const rmOptions = { adoptHealthTimeoutMs: 2_000, taskManager: { drainPollMs: 20, restartBackoff: { initialMs: 50, maxMs: 500 } } };

/** Starts one echo executor per rank through `platform` and records task + routes as a task manager would. */
async function previousManager(store: Store, platform: QuietPlatform, task: UnitTask, ranks: number[]): Promise<{ taskId: string; routes: ExecutorRoute[] }> {
  const taskId = taskIdOf(task);
  const descriptor = testDescriptors(task);
  const launch = descriptor.launch(task);
  await store.acquireTask(newTaskRecord(task));
  const routes: ExecutorRoute[] = [];
  for (const [i, rank] of ranks.entries()) {
    const devices = [dev(rank)];
    const executorId = `${descriptor.executorName(task)}-${rank}`;
    const instance = await platform.startExecutor({ executorId, taskId, node: 'local', devices, launch });
    await waitHealthy(instance.url, '/health', { timeoutMs: 45_000, intervalMs: 50 });
    const route: ExecutorRoute = { executorId, taskId, url: instance.url, sidecarRanks: [rank], devices, state: 'ready', outstanding: 0, startedAt: Date.now() + i };
    await store.putExecutor(route);
    routes.push(route);
  }
  await store.updateTask(taskId, { devices: ranks.map((r) => dev(r)), state: 'ready' });
  return { taskId, routes };
}

const pids = (platform: QuietPlatform) => new Map(platform.processes().map((p) => [p.id, p.pid]));

test.serial('adopt keeps healthy executors as they are: same processes, routes ready, task ready', async (t) => {
  const { rm, store, platform } = startResourceManager(t, { rm: rmOptions });
  const { taskId, routes } = await previousManager(store, platform, echoTask(), [0, 1]);
  const before = pids(platform);

  const report = await rm.adopt();

  t.deepEqual(report.adopted, [taskId]);
  t.deepEqual(report.kept.sort(), routes.map((r) => r.executorId).sort());
  t.deepEqual(report.restarted, []);
  t.deepEqual(pids(platform), before, 'no executor restarted');
  const status = (await rm.status(taskId))!;
  t.is(status.state, 'ready');
  t.deepEqual(status.executors.map((e) => [e.executorId, e.url, e.state]).sort(), routes.map((r) => [r.executorId, r.url, 'ready']).sort());
  t.is((await echo(routes[0]!.url, 'hi')).status, 200);
});

test.serial('after adoption, scale up starts a new executor and scale down drains the adopted ones', async (t) => {
  const { rm, store, platform } = startResourceManager(t, { rm: rmOptions });
  const { taskId, routes } = await previousManager(store, platform, echoTask(), [0, 1]);
  await rm.adopt();

  const up = await rm.scale(taskId, +1);
  t.is(up.executors.length, 3);
  t.is(platform.processes().length, 3);
  const added = up.executors.find((e) => !routes.some((r) => r.executorId === e.executorId))!;
  t.is(added.state, 'ready');

  const down = await rm.scale(taskId, -2);
  t.deepEqual(down.executors.map((e) => e.executorId), [added.executorId], 'the oldest (adopted) executors were removed');
  t.deepEqual(platform.processes().map((p) => p.id), [added.executorId], 'their processes were stopped');
  t.deepEqual(down.devices, added.devices);
});

test.serial('an adopted executor killed afterwards is restarted on the same URL', async (t) => {
  const { rm, store, platform } = startResourceManager(t, { rm: rmOptions });
  const { taskId, routes } = await previousManager(store, platform, echoTask(), [0]);
  await rm.adopt();
  const victim = routes[0]!;
  const oldPid = pids(platform).get(victim.executorId)!;

  process.kill(oldPid, 'SIGKILL');

  await waitUntil('the executor restarted', async () => {
    const pid = pids(platform).get(victim.executorId);
    return pid !== undefined && pid !== oldPid && (await store.getExecutor(victim.executorId))?.state === 'ready';
  }, { timeoutMs: 45_000, intervalMs: 50 });
  t.is((await store.getExecutor(victim.executorId))!.url, victim.url);
  t.is((await echo(victim.url, 'back')).status, 200);
  t.is((await rm.status(taskId))!.executors.length, 1);
});

test.serial('an executor recorded but dead is restarted at adoption while the healthy one is kept', async (t) => {
  const { rm, store, platform } = startResourceManager(t, { rm: rmOptions });
  const { taskId, routes } = await previousManager(store, platform, echoTask(), [0, 1]);
  const [alive, dead] = routes as [ExecutorRoute, ExecutorRoute];
  await platform.stopExecutor(dead.executorId); // gone; its route still says ready
  const alivePid = pids(platform).get(alive.executorId);

  const report = await rm.adopt();

  t.deepEqual(report.kept, [alive.executorId]);
  t.deepEqual(report.restarted, [dead.executorId]);
  t.is(pids(platform).get(alive.executorId), alivePid);
  t.truthy(pids(platform).get(dead.executorId), 'running again');
  t.is((await store.getExecutor(dead.executorId))!.state, 'ready');
  t.is((await echo((await store.getExecutor(dead.executorId))!.url, 'again')).status, 200);
  t.is((await rm.status(taskId))!.executors.length, 2);
});

test.serial('a draining route left by the previous manager is dropped and its devices freed', async (t) => {
  const { rm, store, platform } = startResourceManager(t, { rm: rmOptions });
  const { taskId, routes } = await previousManager(store, platform, echoTask(), [0, 1]);
  await store.setExecutorState(routes[0]!.executorId, 'draining');

  const report = await rm.adopt();

  t.deepEqual(report.dropped, [routes[0]!.executorId]);
  t.deepEqual(platform.processes().map((p) => p.id), [routes[1]!.executorId]);
  t.deepEqual((await rm.status(taskId))!.devices, [dev(1)]);
  t.falsy(await store.getExecutor(routes[0]!.executorId));
});
