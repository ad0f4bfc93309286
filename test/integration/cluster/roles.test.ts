/**
 * The control plane as three processes on loopback (resource manager with the local platform, dispatcher,
 * gateway) sharing one real Redis: the gateway deploys tasks and app functions only through the
 * resource manager's HTTP API. Serial: the tests walk one app through its life.
 */
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { GatewayClient } from '../../../control/gateway/client.js';
import { ResourceManagerClient } from '../../../control/resources/client.js';
import { isCornserveError } from '../../../functions/sdk/index.js';
import { waitUntil } from '../../../lib/wait.js';
import { ECHO_APP, TEST_ADMIN_TOKEN } from '../../helpers/platform.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { CLI, DISPATCHER, startRole, type RoleProcess } from '../../helpers/roles.js';

let redis: RedisServer;
let rm: RoleProcess;
let dispatcher: RoleProcess;
let gateway: RoleProcess;
let client: GatewayClient;
const rmArgs = () => ['resource-manager', '--redis', redis.url, '--platform', 'local', '--devices', '3'];

test.before(async () => {
  redis = await startRedis();
  rm = await startRole(CLI, rmArgs());
  dispatcher = await startRole(DISPATCHER, ['--redis', redis.url]);
  gateway = await startRole(CLI, ['gateway', '--redis', redis.url], {
    CORNSERVE_RESOURCE_MANAGER_URL: rm.url,
    CORNSERVE_DISPATCHER_URL: dispatcher.url,
    CORNSERVE_ADMIN_TOKEN: TEST_ADMIN_TOKEN,
  });
  client = new GatewayClient(gateway.url, TEST_ADMIN_TOKEN);
});

test.after.always(async () => {
  for (const p of [gateway, dispatcher, rm]) await p?.stop();
  await redis?.stop();
});

const invokeJson = async (data: unknown) => (await client.invoke('echo', data)).json();

async function echoTaskId(): Promise<string> {
  const tasks = await client.tasks();
  return tasks.find((t) => t.name.includes('echo'))!.task_id;
}

test.serial('registering the echo app through the gateway process deploys its task in the resource-manager process', async (t) => {
  const events: string[] = [];
  const last = await client.register(await readFile(ECHO_APP, 'utf8'), {}, (e) => events.push(e.type));
  t.is(last.type, 'final', JSON.stringify(last) + gateway.output() + rm.output());
  t.true(events.includes('progress'));
  const tasks = await new ResourceManagerClient(rm.url).listTasks();
  t.is(tasks.length, 1);
  t.is(tasks[0]!.state, 'ready');
});

test.serial('the app answers a JSON invocation', async (t) => {
  t.deepEqual(await invokeJson({ text: 'hello' }), { echo: 'hello' });
});

test.serial('the resource-manager process serves the autoscaler gauges per task at /metrics', async (t) => {
  const taskId = await echoTaskId();
  const metrics = await waitUntil('the gauges of the echo task', async () => {
    const text = await (await fetch(new URL('/metrics', rm.url))).text();
    return text.includes(`cornserve_autoscale_desired_executors{task_id="${taskId}"}`) ? text : undefined;
  }, { timeoutMs: 60_000, intervalMs: 250 });
  for (const gauge of ['cornserve_autoscale_desired_executors', 'cornserve_autoscale_executors', 'cornserve_autoscale_demand_rps', 'cornserve_autoscale_capacity_rps'])
    t.regex(metrics, new RegExp(`^${gauge}\\{task_id="${taskId}"\\} \\d`, 'm'));
});

test.serial('the app streams an invocation as NDJSON', async (t) => {
  const res = await client.invoke('echo', { text: 'hi', chunks: 3 });
  t.regex(res.headers.get('content-type') ?? '', /ndjson/);
  const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l));
  t.deepEqual(lines, [0, 1, 2].map((index) => ({ echo: 'hi', index })));
});

test.serial('scaling through the gateway adds an executor in the resource-manager process', async (t) => {
  const scaled = await client.scale(await echoTaskId(), 1);
  t.is(scaled.devices.length, 2);
  t.is(scaled.executors.length, 2);
});

test.serial('the resource manager API reports 409 INSUFFICIENT_DEVICES across the wire', async (t) => {
  const e = await t.throwsAsync(new ResourceManagerClient(rm.url).scale(await echoTaskId(), 5));
  t.true(isCornserveError(e));
  t.like(e, { code: 'INSUFFICIENT_DEVICES', status: 409 });
});

test.serial('the resource manager API reports 404 TASK_NOT_FOUND across the wire', async (t) => {
  const e = await t.throwsAsync(new ResourceManagerClient(rm.url).scale('nosuchtask-000000000000', 1));
  t.like(e, { code: 'TASK_NOT_FOUND', status: 404 });
});

test.serial('the gateway passes a resource-manager error on with its status', async (t) => {
  const e = await t.throwsAsync(client.scale('nosuchtask-000000000000', 1));
  t.regex(e.message, /TASK_NOT_FOUND/);
});

test.serial('a restarted resource-manager process recovers the task and the app serves again', async (t) => {
  await rm.stop();
  rm = await startRole(CLI, rmArgs(), {}, rm.port);
  const tasks = await new ResourceManagerClient(rm.url).listTasks();
  t.is(tasks.length, 1);
  t.is(tasks[0]!.state, 'ready');
  t.is(tasks[0]!.executors.length, 2, 'both executors are back');
  const answer = await waitUntil('the app serves after the restart', async () => {
    const res = await client.invoke('echo', { text: 'back' }).catch(() => undefined);
    return res?.ok ? res.json() : undefined;
  }, { timeoutMs: 30_000 });
  t.deepEqual(answer, { echo: 'back' });
});

test.serial('unregistering the app tears its task down in the resource-manager process', async (t) => {
  await client.unregister('echo');
  t.deepEqual(await new ResourceManagerClient(rm.url).listTasks(), []);
  t.deepEqual(await client.list(), {});
});

test.serial('Redis back empty: the resource-manager process stops the tasks it no longer records, and the app registers again', async (t) => {
  t.is((await client.register(await readFile(ECHO_APP, 'utf8'), {})).type, 'final');
  const [task] = await new ResourceManagerClient(rm.url).listTasks();
  const executorUrls = task!.executors.map((e) => e.url);
  t.true(executorUrls.length > 0);
  await redis.restart(); // no persistence: an empty Redis on the same port
  const answers = (url: string) => fetch(new URL('/health', url), { signal: AbortSignal.timeout(2_000) }).then(() => true, () => false);
  await waitUntil('the resource manager stopped the executors of the unrecorded task', async () => !(await Promise.all(executorUrls.map(answers))).some(Boolean), { timeoutMs: 60_000 });
  const health = await waitUntil('the gateway counted the loss', async () => {
    const body = (await (await fetch(new URL('/health', gateway.url))).json()) as { store?: { state: string; losses: number } };
    return body.store && body.store.losses >= 1 && body.store.state === 'ok' ? body.store : undefined;
  }, { timeoutMs: 60_000 });
  t.like(health, { state: 'ok' });
  const last = await client.register(await readFile(ECHO_APP, 'utf8'), {});
  t.is(last.type, 'final', JSON.stringify(last) + gateway.output() + rm.output());
  t.deepEqual(await invokeJson({ text: 'again' }), { echo: 'again' });
});
