import test from 'ava';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore } from '../../../../control/store/memory.js';
import { TaskManager, type TaskManagerOptions } from '../../../../control/taskmanager/manager.js';
import { ExecutorStartError, ExecutorStartTimeoutError } from '../../../../control/taskmanager/errors.js';
import { probeHealth } from '../../../../control/taskmanager/health.js';
import { sleep, waitUntil } from '../../../../lib/wait.js';
import { dev, echo, echoLaunch, exitAtOnceLaunch, flakyLaunch, quietPlatform } from '../../../helpers/local-platform.js';
import { isAlive } from '../../../helpers/repo.js';
import { recordRouteStates } from '../../../helpers/store-records.js';

function setup(t: { teardown(fn: () => unknown): void }, overrides: Partial<TaskManagerOptions> = {}) {
  const store = new MemoryStore();
  const platform = quietPlatform();
  const tm = new TaskManager({ taskId: 'echotask-1', executorName: 'echo', launch: echoLaunch(), store, platform, drainPollMs: 20, ...overrides });
  t.teardown(async () => {
    await tm.stop({ drain: false });
    await platform.shutdown();
  });
  return { store, platform, tm };
}


test.serial('starts one executor per device group, each with a ready route carrying its ranks', async (t) => {
  const { store, tm } = setup(t);
  await tm.addExecutors([[dev(0)], [dev(1)]]);
  const routes = await store.listExecutors('echotask-1');
  t.deepEqual(routes.map((r) => [r.executorId, r.state, r.sidecarRanks, r.outstanding]), [
    ['echo-0', 'ready', [0], 0],
    ['echo-1', 'ready', [1], 0],
  ]);
  for (const r of routes) t.deepEqual((await echo(r.url, 'hi')).body, { echo: 'hi' });
});

test.serial('an executor spanning several devices gets one route with all their ranks', async (t) => {
  const { store, tm } = setup(t, { launch: echoLaunch(0, 2) });
  await tm.addExecutors([[dev(2), dev(3)]]);
  const [route] = await store.listExecutors();
  t.like(route, { executorId: 'echo-2-3', sidecarRanks: [2, 3], state: 'ready' });
});

test.serial('an executor that exits while starting fails at once with its last output lines, leaving nothing behind', async (t) => {
  const { store, platform, tm } = setup(t, { launch: exitAtOnceLaunch() });
  const err = await t.throwsAsync(tm.addExecutors([[dev(0)]]), { instanceOf: ExecutorStartError });
  t.regex(err!.message, /exited with code 3 while starting/);
  t.regex(err!.message, /exit-at-once fixture refuses to start/);
  t.deepEqual(await store.listExecutors(), []);
  t.deepEqual(platform.processes(), []);
});

test.serial('when one of several executors fails to start, the others started with it are stopped', async (t) => {
  const { store, platform, tm } = setup(t, { launch: flakyLaunch({ failRank: 1 }) });
  const err = await t.throwsAsync(tm.addExecutors([[dev(0)], [dev(1)]]), { instanceOf: ExecutorStartError });
  t.regex(err!.message, /echo-1 exited with code 3/);
  t.deepEqual(await store.listExecutors(), []);
  t.deepEqual(platform.processes(), []);
  t.deepEqual(tm.executors(), []);
});

test.serial('an executor that never answers its health check fails after healthTimeoutMs and is stopped', async (t) => {
  const { store, platform, tm } = setup(t, { launch: { ...echoLaunch(), healthPath: '/no-such-path' }, healthTimeoutMs: 3_000 });
  const err = await t.throwsAsync(tm.addExecutors([[dev(0)]]), { instanceOf: ExecutorStartTimeoutError });
  t.regex(err!.message, /not healthy within 3000 ms/);
  t.deepEqual(await store.listExecutors(), []);
  t.deepEqual(platform.processes(), []);
});

test.serial('a killed executor is restarted on the same devices and URL, its route failed then ready again', async (t) => {
  const { store, platform, tm } = setup(t, { restartBackoff: { initialMs: 50 } });
  await tm.addExecutors([[dev(1)]]);
  const before = (await store.getExecutor('echo-1'))!;
  const states = recordRouteStates(store, 'echo-1');
  const oldPid = platform.processes()[0]!.pid;
  process.kill(oldPid, 'SIGKILL');
  await waitUntil('restarted', () => states.includes('ready'), { timeoutMs: 60_000 });
  t.deepEqual(states.slice(0, states.indexOf('ready') + 1).filter((s, i, a) => a.indexOf(s) === i), ['failed', 'starting', 'ready']);
  const after = (await store.getExecutor('echo-1'))!;
  t.like(after, { url: before.url, devices: before.devices, state: 'ready' });
  t.not(platform.processes()[0]!.pid, oldPid);
  t.deepEqual((await echo(after.url, 'again')).body, { echo: 'again' });
  t.is(tm.executors()[0]!.restarts, 1);
});

test.serial('an executor that stops answering its health probes leaves the routes at once and is restarted', async (t) => {
  const { store, platform, tm } = setup(t, { healthCheck: { intervalMs: 100, timeoutMs: 300, unansweredLimit: 2 }, restartBackoff: { initialMs: 50 }, stopGraceMs: 500 });
  await tm.addExecutors([[dev(0)]]);
  const states = recordRouteStates(store, 'echo-0');
  const frozen = platform.processes()[0]!.pid;
  process.kill(frozen, 'SIGSTOP'); // alive but silent: no exit event, only the probes can tell
  t.teardown(() => { if (isAlive(frozen)) process.kill(frozen, 'SIGKILL'); });
  await waitUntil('out of the routes', () => states[0], { timeoutMs: 30_000 });
  t.is(states[0], 'failed');
  await waitUntil('ready again', () => states.includes('ready'), { timeoutMs: 60_000 });
  t.false(isAlive(frozen), 'the silent process was stopped');
  t.deepEqual((await echo((await store.getExecutor('echo-0'))!.url, 'awake')).body, { echo: 'awake' });
  t.is(tm.executors()[0]!.restarts, 1);
});

test.serial('health checks of a healthy executor never take it out of the routes', async (t) => {
  const { store, tm } = setup(t, { healthCheck: { intervalMs: 50 } });
  await tm.addExecutors([[dev(0)]]);
  const states = recordRouteStates(store, 'echo-0');
  let probes = 0;
  const { url } = (await store.getExecutor('echo-0'))!;
  await waitUntil('many probe intervals', async () => (await probeHealth(url, '/health')) && ++probes >= 20, { intervalMs: 50 });
  t.deepEqual(states, []);
  t.is(tm.executors()[0]!.restarts, 0);
});

test.serial('removal keeps the executor serving while its route has outstanding requests', async (t) => {
  const { store, platform, tm } = setup(t);
  await tm.addExecutors([[dev(0)]]);
  const url = (await store.getExecutor('echo-0'))!.url;
  const pid = platform.processes()[0]!.pid;
  await store.adjustOutstanding('echo-0', +1); // a dispatcher's lease
  const removed = tm.removeExecutors(1, { graceMs: 60_000 });
  await waitUntil('draining', async () => (await store.getExecutor('echo-0'))?.state === 'draining');
  await sleep(300); // many drain polls
  t.true(await probeHealth(url, '/health'));
  t.true(isAlive(pid));
  await store.adjustOutstanding('echo-0', -1);
  t.deepEqual(await removed, [dev(0)]);
  t.is(await store.getExecutor('echo-0'), undefined);
  t.false(isAlive(pid));
});

test.serial('removal stops the executor anyway once the drain grace passes', async (t) => {
  const { store, platform, tm } = setup(t);
  await tm.addExecutors([[dev(0)]]);
  await store.adjustOutstanding('echo-0', +1); // never released
  await tm.removeExecutors(1, { graceMs: 200 });
  t.is(await store.getExecutor('echo-0'), undefined);
  t.deepEqual(platform.processes(), []);
});

test.serial('an in-flight slow request finishes while its executor is being removed', async (t) => {
  const { store, tm } = setup(t);
  await tm.addExecutors([[dev(0)]]);
  const route = (await store.getExecutor('echo-0'))!;
  await store.adjustOutstanding(route.executorId, +1);
  const request = echo(route.url, 'slow', 1_500).finally(() => store.adjustOutstanding(route.executorId, -1));
  const removed = tm.removeExecutors(1);
  t.deepEqual(await request, { status: 200, body: { echo: 'slow' } });
  await removed;
  t.is(await store.getExecutor('echo-0'), undefined);
});

test.serial('removeExecutors takes the oldest executors first', async (t) => {
  const { store, tm } = setup(t);
  await tm.addExecutors([[dev(2)]]);
  await tm.addExecutors([[dev(0)]]);
  t.deepEqual(await tm.removeExecutors(1), [dev(2)]);
  t.deepEqual((await store.listExecutors()).map((r) => r.executorId), ['echo-0']);
});

test.serial('stop drains and stops every executor and deletes every route', async (t) => {
  const { store, platform, tm } = setup(t);
  await tm.addExecutors([[dev(0)], [dev(1)]]);
  const devices = await tm.stop();
  t.deepEqual(devices, [dev(0), dev(1)]);
  t.deepEqual(await store.listExecutors(), []);
  t.deepEqual(platform.processes(), []);
});

test.serial('an executor removed while it waits to be restarted is not started again', async (t) => {
  const { store, platform, tm } = setup(t, { restartBackoff: { initialMs: 60_000 } });
  await tm.addExecutors([[dev(0)]]);
  const states = recordRouteStates(store, 'echo-0');
  process.kill(platform.processes()[0]!.pid, 'SIGKILL');
  await waitUntil('failed', () => states.includes('failed'));
  await tm.removeExecutors(1);
  t.deepEqual(platform.processes(), []);
  t.is(await store.getExecutor('echo-0'), undefined);
});

test.serial('an executor whose restarts keep failing is retried until one succeeds', async (t) => {
  t.timeout(240_000); // its waits may outlast ava's 60 s idle timeout on a loaded machine
  const marker = join(tmpdir(), `cornserve-flaky-${process.pid}-${Date.now()}`);
  t.teardown(() => rmSync(marker, { force: true }));
  const { store, platform, tm } = setup(t, { launch: flakyLaunch({ failIfExists: marker }), restartBackoff: { initialMs: 20, maxMs: 100 } });
  await tm.addExecutors([[dev(0)]]);
  const states = recordRouteStates(store, 'echo-0');
  writeFileSync(marker, '');
  process.kill(platform.processes()[0]!.pid, 'SIGKILL');
  await waitUntil('three failed restarts', () => tm.executors()[0]!.restarts >= 3, { timeoutMs: 120_000 }); // three node + tsx starts
  t.false(states.includes('ready'));
  rmSync(marker);
  await waitUntil('ready again', async () => (await store.getExecutor('echo-0'))?.state === 'ready', { timeoutMs: 60_000 });
  t.deepEqual((await echo((await store.getExecutor('echo-0'))!.url, 'back')).body, { echo: 'back' });
});
