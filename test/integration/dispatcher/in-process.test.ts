/**
 * InProcessDispatcher (an app function running graph execution itself) against the CloudEvent path to the
 * dispatcher service: the same outputs, streams and errors, over one REAL Redis store shared with the service,
 * against REAL echo executor processes.
 */
import test from 'ava';
import { DispatchError, TaskGraph, type DispatchResult, type GraphDispatcher, type TaskInvocation } from '../../../functions/sdk/index.js';
import { EchoStreamTask, EchoTask } from '../../../functions/tasks/echo.js';
import { CloudEventDispatcher } from '../../../functions/runtime/cloudevent-dispatcher.js';
import { InProcessDispatcher } from '../../../control/dispatcher/in-process.js';
import { startDispatcher, type RunningDispatcher } from '../../../control/dispatcher/server.js';
import { RedisStore } from '../../../control/store/redis.js';
import { waitUntil } from '../../../lib/wait.js';
import { deployTask, outstandingByExecutor, startEchoExecutor, type EchoExecutor } from '../../helpers/executors.js';
import { startRedis, type RedisServer } from '../../helpers/redis.js';
import { uniquePrefix } from '../../helpers/ids.js';

let redis: RedisServer;
let executor: EchoExecutor;
let store: RedisStore;
let service: RunningDispatcher;
let viaEvent: CloudEventDispatcher;
let inProcess: InProcessDispatcher;
let own: RedisStore;
const echoTask = new EchoTask({ serviceTimeMs: 0 });
const slowTask = new EchoTask({ serviceTimeMs: 30_000 });
const streamTask = new EchoStreamTask({ serviceTimeMs: 0 });
const drainTask = new EchoTask({ serviceTimeMs: 1_500 });
const cutTask = new EchoTask({ serviceTimeMs: 29_000 });

test.before(async () => {
  [redis, executor] = await Promise.all([startRedis(), startEchoExecutor()]);
  store = new RedisStore({ url: redis.url, prefix: uniquePrefix('inproc') });
  await store.ready();
  for (const [id, task] of [['x-echo', echoTask], ['x-slow', slowTask], ['x-stream', streamTask], ['x-drain', drainTask], ['x-cut', cutTask]] as const) await deployTask(store, task, [{ url: executor.url, executorId: id }]);
  service = await startDispatcher({ store });
  viaEvent = new CloudEventDispatcher(service.url, { appId: 'test' });
  // A second store client: what another process (an app function) holds.
  own = new RedisStore({ url: redis.url, prefix: store.prefix });
  await own.ready();
  inProcess = new InProcessDispatcher(own, { appId: 'test' });
});
test.after.always(async () => {
  viaEvent?.close();
  await service?.close(0);
  await store?.close();
  await own?.close();
  await executor?.stop();
  await redis?.stop();
});

const inFive = () => Date.now() + 5 * 60_000;
const echo = (text: string): TaskInvocation => ({ task: echoTask, input: { text }, output: { echo: '' } });
const both: Array<[string, () => GraphDispatcher]> = [['cloudevent', () => viaEvent], ['in-process', () => inProcess]];

async function drained(r: DispatchResult): Promise<{ outputs: unknown[]; lines: unknown[] }> {
  const lines: unknown[] = [];
  if (r.stream) for await (const l of r.stream) lines.push(JSON.parse(l));
  return { outputs: r.outputs, lines };
}

test('a JSON graph gives the same outputs in process as through the dispatcher service', async (t) => {
  const graph = new TaskGraph([echo('a'), echo('b')]).toJSON();
  const [event, local] = await Promise.all(both.map(([, d]) => d().dispatch(graph, { deadline: inFive() }).then(drained)));
  t.deepEqual(local!, event!);
  t.deepEqual(local!.outputs, [{ echo: 'a' }, { echo: 'b' }]);
});

test('a recorded graph given as it is gives what its JSON gives, in process and through the service', async (t) => {
  const graph = new TaskGraph([echo('a'), { task: streamTask, input: { text: 'x', chunks: 2 }, output: streamTask.makeRecordOutput() }]);
  const recorded = await inProcess.dispatchRecorded(graph, { deadline: inFive() }).then(drained);
  const event = await viaEvent.dispatch(graph.toJSON(), { deadline: inFive() }).then(drained);
  t.deepEqual(recorded, event);
  t.deepEqual(recorded.outputs, [{ echo: 'a' }, {}]);
  t.is(recorded.lines.length, 2);
});

test('a streaming graph gives the same lines in process as through the dispatcher service', async (t) => {
  const graph = new TaskGraph([{ task: streamTask, input: { text: 'x', chunks: 3 }, output: streamTask.makeRecordOutput() }]).toJSON();
  const [event, local] = await Promise.all(both.map(([, d]) => d().dispatch(graph, { deadline: inFive() }).then(drained)));
  t.deepEqual(local!, event!);
  t.is(local!.lines.length, 3);
});

test('an undeployed task fails in process with the DispatchError the service path gives', async (t) => {
  const graph = new TaskGraph([{ task: new EchoTask({ serviceTimeMs: 7 }), input: { text: 'x' }, output: { echo: '' } }]).toJSON();
  const errors = await Promise.all(both.map(([, d]) => d().dispatch(graph, { deadline: inFive() }).then(() => undefined, (e: unknown) => e)));
  for (const e of errors) t.true(e instanceof DispatchError);
  const [event, local] = errors as DispatchError[];
  t.is(local!.code, 'TASK_NOT_DEPLOYED');
  t.deepEqual([local!.status, local!.code, local!.message], [event!.status, event!.code, event!.message]);
});

test('an in-process lease is counted in the shared store while its call runs, and released after', async (t) => {
  const graph = new TaskGraph([{ task: slowTask, input: { text: 'x' }, output: { echo: '' } }]).toJSON();
  const caller = new AbortController();
  const pending = inProcess.dispatch(graph, { deadline: inFive(), signal: caller.signal }).catch((e: unknown) => e);
  const slowId = 'x-slow';
  await waitUntil('the in-process lease in the shared store', async () => (await outstandingByExecutor(store))[slowId] === 1, { timeoutMs: 30_000 });
  caller.abort(new Error('test done'));
  const e = await pending;
  t.true(e instanceof DispatchError);
  t.is((e as DispatchError).code, 'DISPATCH_CANCELLED');
  await waitUntil('the lease released', async () => (await outstandingByExecutor(store))[slowId] === 0, { timeoutMs: 30_000 });
  t.pass();
});

/** An InProcessDispatcher of its own (closed by the test) over another client of the shared store. */
async function closable(t: import('ava').ExecutionContext): Promise<InProcessDispatcher> {
  const client = new RedisStore({ url: redis.url, prefix: store.prefix });
  await client.ready();
  t.teardown(() => client.close());
  return new InProcessDispatcher(client, { appId: 'test' });
}

test('close() lets a graph in flight finish, refuses new graphs with 503 SHUTTING_DOWN, and releases the lease', async (t) => {
  const dispatcher = await closable(t);
  const graph = new TaskGraph([{ task: drainTask, input: { text: 'drained' }, output: { echo: '' } }]).toJSON();
  const pending = dispatcher.dispatch(graph, { deadline: inFive() });
  await waitUntil('the graph in flight', async () => (await outstandingByExecutor(store))['x-drain'] === 1, { timeoutMs: 30_000 });
  const closed = dispatcher.close(60_000);
  const refused = await t.throwsAsync(dispatcher.dispatch(graph, { deadline: inFive() }));
  t.like(refused, { status: 503, code: 'SHUTTING_DOWN' });
  t.deepEqual((await pending).outputs, [{ echo: 'drained' }]);
  await closed;
  t.is((await outstandingByExecutor(store))['x-drain'], 0);
});

test('close() cuts a graph still running when its grace is over, and releases the lease', async (t) => {
  const dispatcher = await closable(t);
  const graph = new TaskGraph([{ task: cutTask, input: { text: 'x' }, output: { echo: '' } }]).toJSON();
  const pending = dispatcher.dispatch(graph, { deadline: inFive() }).catch((e: unknown) => e);
  await waitUntil('the graph in flight', async () => (await outstandingByExecutor(store))['x-cut'] === 1, { timeoutMs: 30_000 });
  await dispatcher.close(50);
  const e = await pending;
  t.true(e instanceof DispatchError, String(e));
  t.is((e as DispatchError).code, 'DISPATCH_CANCELLED');
  await waitUntil('the lease released', async () => (await outstandingByExecutor(store))['x-cut'] === 0, { timeoutMs: 30_000 });
  t.pass();
});
