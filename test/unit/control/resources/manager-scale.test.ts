import test from 'ava';
import { TWO_DEVICE_SERVICE_TIME, echoTask, ownersPicture, startResourceManager } from '../../../helpers/resources.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { echoDescriptor } from '../../../../control/descriptors/echo.js';
import type { TaskDescriptor } from '../../../../lib/descriptor.js';
import { echo, flakyLaunch } from '../../../helpers/local-platform.js';
import { waitUntil } from '../../../../lib/wait.js';

test.serial('scaling up by n devices starts n more executors, each on its own device, all ready', async (t) => {
  const { rm, store, platform } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(0)]);
  const status = await rm.scale(id!, 2);
  t.deepEqual(status.executors.map((e) => [e.state, e.sidecarRanks]), [['ready', [0]], ['ready', [1]], ['ready', [2]]]);
  t.deepEqual(status.devices.map((d) => d.globalRank), [0, 1, 2]);
  t.is(platform.processes().length, 3);
  t.is(ownersPicture(rm, { [id!]: 'e' }), 'eee.');
  t.deepEqual((await store.getTask(id!))!.devices.map((d) => d.globalRank), [0, 1, 2]);
  for (const e of status.executors) t.deepEqual((await echo(e.url, 'n')).body, { echo: 'n' });
});

test.serial('scaling down drains and stops the oldest executors and frees their devices', async (t) => {
  const { rm, platform } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(0)]);
  await rm.scale(id!, 2);
  const status = await rm.scale(id!, -2);
  t.deepEqual(status.executors.map((e) => e.sidecarRanks), [[2]]);
  t.deepEqual(status.devices.map((d) => d.globalRank), [2]);
  t.is(platform.processes().length, 1);
  t.is(ownersPicture(rm, { [id!]: 'e' }), '..e.');
});

test.serial('scaling below zero executors is refused with 409 and changes nothing', async (t) => {
  const { rm, platform } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(0)]);
  const err = await t.throwsAsync(rm.scale(id!, -2));
  t.like(err, { code: 'SCALE_BELOW_MINIMUM', status: 409 });
  t.is(platform.processes().length, 1);
});

test.serial('a task scaled to zero drains its executors, frees its devices and stays deployed and ready', async (t) => {
  const { rm, store, platform } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(0)]);
  const status = await rm.scale(id!, -1);
  t.deepEqual(status.executors, []);
  t.like(await store.getTask(id!), { state: 'ready', usage: 1, devices: [] });
  t.deepEqual(platform.processes(), []);
  t.is(ownersPicture(rm, { [id!]: 'e' }), '....');
});

test.serial('a task at zero executors scales back up and serves', async (t) => {
  const { rm, platform } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(0)]);
  await rm.scale(id!, -1);
  const status = await rm.scale(id!, 1);
  t.deepEqual(status.executors.map((e) => e.state), ['ready']);
  t.is(platform.processes().length, 1);
  t.deepEqual((await echo(status.executors[0]!.url, 'back')).body, { echo: 'back' });
});

test.serial('scaling beyond the free devices is refused with 409 and changes nothing', async (t) => {
  const { rm, platform } = startResourceManager(t, { devices: 2 });
  const [id] = await rm.deploy([echoTask(0)]);
  const err = await t.throwsAsync(rm.scale(id!, 2));
  t.like(err, { code: 'INSUFFICIENT_DEVICES', status: 409 });
  t.is(platform.processes().length, 1);
  t.is(ownersPicture(rm, { [id!]: 'e' }), 'e.');
});

test.serial('scaling by zero is a 400', async (t) => {
  const { rm } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(0)]);
  t.like(await t.throwsAsync(rm.scale(id!, 0)), { code: 'INVALID_SCALE', status: 400 });
});

test.serial('scaling an unknown task is a 404', async (t) => {
  const { rm } = startResourceManager(t);
  t.like(await t.throwsAsync(rm.scale('echobasetask-000000000000', 1)), { code: 'TASK_NOT_FOUND', status: 404 });
});

test.serial('scale-up spreads a task over nodes when their free devices tie', async (t) => {
  const { rm } = startResourceManager(t, { devices: 2, nodes: ['a', 'b'] });
  const [x] = await rm.deploy([echoTask(0)]);
  const [y] = await rm.deploy([echoTask(1)]);
  t.is(ownersPicture(rm, { [x!]: 'x', [y!]: 'y' }), 'x.y.');
  const status = await rm.scale(x!, 1);
  t.deepEqual(status.devices.map((d) => [d.node, d.localRank]), [['a', 0], ['b', 1]]);
  t.is(ownersPicture(rm, { [x!]: 'x', [y!]: 'y' }), 'x.yx');
});

test.serial('a killed executor of a deployed task is restarted and its route is ready again', async (t) => {
  const { rm, store, platform } = startResourceManager(t, { rm: { taskManager: { restartBackoff: { initialMs: 50 } } } });
  const [id] = await rm.deploy([echoTask(0)]);
  const [before] = await store.listExecutors(id);
  const oldPid = platform.processes()[0]!.pid;
  process.kill(oldPid, 'SIGKILL');
  await waitUntil('restarted and ready', async () => {
    const r = await store.getExecutor(before!.executorId);
    const p = platform.processes()[0];
    return r?.state === 'ready' && p !== undefined && p.pid !== oldPid;
  }, { timeoutMs: 60_000 });
  t.deepEqual((await echo(before!.url, 'back')).body, { echo: 'back' });
  t.like(await store.getTask(id!), { state: 'ready', usage: 1 });
});

test.serial('a task with multi-device executors scales in whole executors', async (t) => {
  const { rm } = startResourceManager(t);
  const [id] = await rm.deploy([echoTask(TWO_DEVICE_SERVICE_TIME)]);
  const err = await t.throwsAsync(rm.scale(id!, 1));
  t.like(err, { code: 'INVALID_SCALE', status: 400 });
  t.regex(err!.message, /2 device\(s\) per executor/);
  const status = await rm.scale(id!, 2);
  t.deepEqual(status.executors.map((e) => e.sidecarRanks), [[0, 1], [2, 3]]);
  t.is(ownersPicture(rm, { [id!]: 'e' }), 'eeee');
});

test.serial('a second scale-up starts its executor while the first one is still starting', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hold-start-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const hold = join(dir, 'hold');
  const holding: TaskDescriptor = { ...(echoDescriptor as unknown as TaskDescriptor), launch: () => flakyLaunch({ holdWhileExists: hold }) };
  const { rm, platform } = startResourceManager(t, { rm: { descriptors: () => holding } });
  const [id] = await rm.deploy([echoTask(0)]);
  writeFileSync(hold, ''); // executors started from now on wait until the file is gone
  const first = rm.scale(id!, 1);
  const second = rm.scale(id!, 1);
  first.catch(() => undefined);
  second.catch(() => undefined);
  await waitUntil('both scale-ups launched', () => platform.processes().length === 3, { timeoutMs: 15_000 });
  t.is(ownersPicture(rm, { [id!]: 'e' }), 'eee.');
  rmSync(hold);
  await Promise.all([first, second]);
  const status = (await rm.status(id!))!;
  t.deepEqual(status.executors.map((e) => e.state), ['ready', 'ready', 'ready']);
});
