/**
 * dispatchGraph end to end against REAL echo executor processes (routes put into a MemoryStore by hand).
 */
import test from 'ava';
import { TaskGraph, type TaskInvocation } from '../../../functions/sdk/index.js';
import { EchoStreamTask, EchoTask } from '../../../functions/tasks/echo.js';
import { echoDescriptor } from '../../../control/descriptors/echo.js';
import type { TaskDescriptor } from '../../../lib/descriptor.js';
import { dispatchGraph } from '../../../control/dispatcher/dispatch.js';
import type { DispatcherError } from '../../../lib/dispatch-errors.js';
import { MemoryStore } from '../../../control/store/memory.js';
import { waitUntil } from '../../../lib/wait.js';
import { closedPortUrl, deployTask, startBrokenStreamExecutor, outstandingByExecutor, startEchoExecutor, type EchoExecutor } from '../../helpers/executors.js';

const echo = (ms: number, text: string): TaskInvocation => ({ task: new EchoTask({ serviceTimeMs: ms }), input: { text }, output: { echo: '' } });
const echoStream = (ms: number, text: string, chunks: number): TaskInvocation => {
  const task = new EchoStreamTask({ serviceTimeMs: ms });
  return { task, input: { text, chunks }, output: task.makeRecordOutput() };
};
const SLOW = 30_000;
const inFive = () => Date.now() + 5 * 60_000;

// Executors are few (each is a process; the machine has 2 cores). Tests that watch an executor's in-flight
// count are serial (ava runs them before the concurrent ones) and leave it at 0.
let shared: EchoExecutor[] = [];
test.before(async () => {
  shared = await Promise.all([startEchoExecutor(), startEchoExecutor()]);
});
test.after.always(async () => {
  await Promise.all(shared.map((e) => e.stop()));
});

const allZero = async (store: MemoryStore) => Object.values(await outstandingByExecutor(store)).every((n) => n === 0);

test('a JSON graph returns every output in order and leaves no outstanding request', async (t) => {
  const store = new MemoryStore();
  const a = echo(0, 'first');
  const b = echo(5, 'second');
  await deployTask(store, a.task, [{ url: shared[0]!.url }]);
  await deployTask(store, b.task, [{ url: shared[1]!.url }]);
  const result = await dispatchGraph(new TaskGraph([a, b]), { deadline: inFive() }, { store });
  t.deepEqual(result, { outputs: [{ echo: 'first' }, { echo: 'second' }] });
  t.true(await allZero(store));
});

test('a streaming graph returns the outputs with {} for the stream, then the stream chunks', async (t) => {
  const store = new MemoryStore();
  const a = echo(0, 'before');
  const s = echoStream(0, 'tick', 3);
  await deployTask(store, a.task, shared.map((e) => ({ url: e.url }))); // EchoTask and EchoStreamTask share a deployment
  const result = await dispatchGraph(new TaskGraph([a, s]), { deadline: inFive() }, { store });
  t.deepEqual(result.outputs, [{ echo: 'before' }, {}]);
  const lines: string[] = [];
  for await (const line of result.stream!) lines.push(line);
  t.deepEqual(lines.map((l) => JSON.parse(l)), [0, 1, 2].map((index) => ({ echo: 'tick', index })));
  t.true(await allZero(store));
});

test('the streaming executor stays leased until its stream is read to the end', async (t) => {
  const store = new MemoryStore();
  const s = echoStream(0, 'tick', 2);
  await deployTask(store, s.task, [{ url: shared[0]!.url, executorId: 'streamer' }]);
  const result = await dispatchGraph(new TaskGraph([s]), { deadline: inFive() }, { store });
  const leased = (await outstandingByExecutor(store)).streamer;
  for await (const _ of result.stream!);
  t.deepEqual([leased, (await outstandingByExecutor(store)).streamer], [1, 0]);
});

test('closing the stream early releases the executor', async (t) => {
  const store = new MemoryStore();
  const s = echoStream(0, 'tick', 50);
  await deployTask(store, s.task, [{ url: shared[0]!.url, executorId: 'streamer' }]);
  const result = await dispatchGraph(new TaskGraph([s]), { deadline: inFive() }, { store });
  for await (const _ of result.stream!) break;
  t.true(await allZero(store));
});

test.serial('an executor that cannot be reached fails the graph with one TASK_FAILED naming its task (not its address), and its siblings are cancelled', async (t) => {
  const busy = shared[0];
  const store = new MemoryStore();
  const slow = echo(SLOW, 'slow');
  const broken = echo(1, 'broken');
  await deployTask(store, slow.task, [{ url: busy!.url }]);
  const { routes } = await deployTask(store, broken.task, [{ url: await closedPortUrl(), executorId: 'dead-executor' }]);
  const graph = new TaskGraph([slow, broken]);
  const err = await t.throwsAsync<DispatcherError>(dispatchGraph(graph, { deadline: inFive() }, { store }));
  t.like(err, { code: 'TASK_FAILED', status: 502, details: { invocation: 1, task: 'echo-1ms', taskId: routes[0]!.taskId } });
  t.regex(err!.message, /task echo-1ms failed: its executor could not be reached: .*ECONNREFUSED/);
  const wire = JSON.stringify(err!.toJSON());
  t.false(/127\.0\.0\.1|localhost|dead-executor/.test(wire), wire);
  await waitUntil('the slow sibling request to be aborted', async () => (await busy!.info()).inFlight === 0);
  t.true(await allZero(store));
});

test.serial('a one-invocation graph whose executor refuses the connection is sent to another ready executor, and both leases are released', async (t) => {
  const store = new MemoryStore();
  const one = echo(0, 'rerouted');
  // The dead executor looks idler, so it is leased first.
  await deployTask(store, one.task, [{ url: await closedPortUrl(), executorId: 'dead', outstanding: 0 }, { url: shared[0]!.url, executorId: 'alive', outstanding: 3 }]);
  const result = await dispatchGraph(new TaskGraph([one]), { deadline: inFive() }, { store });
  t.deepEqual(result, { outputs: [{ echo: 'rerouted' }] });
  t.deepEqual(await outstandingByExecutor(store), { dead: 0, alive: 3 });
});

test('a one-invocation graph whose only executor refuses the connection is a 503 NO_EXECUTOR with Retry-After, not a 502', async (t) => {
  const store = new MemoryStore();
  const one = echo(0, 'nowhere');
  const { routes } = await deployTask(store, one.task, [{ url: await closedPortUrl(), executorId: 'dead' }]);
  const err = await t.throwsAsync<DispatcherError>(dispatchGraph(new TaskGraph([one]), { deadline: inFive() }, { store }));
  t.like(err, { code: 'NO_EXECUTOR', status: 503, details: { taskId: routes[0]!.taskId, retryAfterS: 5 } });
  t.deepEqual(await outstandingByExecutor(store), { dead: 0 });
});

test.serial('an executor killed mid-request fails the graph naming it and the other executor call is aborted', async (t) => {
  const victim = await startEchoExecutor();
  t.teardown(() => victim.stop());
  const survivor = shared[1];
  const store = new MemoryStore();
  const a = echo(SLOW, 'a');
  const b = echo(SLOW, 'b');
  await deployTask(store, a.task, [{ url: victim!.url, executorId: 'victim' }, { url: survivor!.url, executorId: 'survivor' }]);
  const pending = dispatchGraph(new TaskGraph([a, b]), { deadline: inFive() }, { store });
  await waitUntil('both calls to arrive', async () => (await victim!.info()).inFlight === 1 && (await survivor!.info()).inFlight === 1);
  await victim!.kill('SIGKILL');
  const err = await t.throwsAsync<DispatcherError>(pending);
  t.like(err, { code: 'TASK_FAILED', details: { task: 'echo-30000ms' } });
  t.regex(err!.message, /connection broke before it answered/);
  await waitUntil('the surviving call to be aborted', async () => (await survivor!.info()).inFlight === 0);
  t.true(await allZero(store));
});

test("an executor's error reply reaches the caller with the executor's own code and status, naming the task", async (t) => {
  const store = new MemoryStore();
  const a = echo(0, 'x');
  await deployTask(store, a.task, [{ url: shared[0]!.url }]);
  // A descriptor that builds a request the echo executor rejects (negative service time) with its own 422 body.
  const invalid: TaskDescriptor = { ...(echoDescriptor as unknown as TaskDescriptor), request: () => ({ path: '/echo', body: { text: 'x', service_time_ms: -1 } }) };
  const err = await t.throwsAsync<DispatcherError>(dispatchGraph(new TaskGraph([a]), { deadline: inFive() }, { store, descriptors: () => invalid }));
  t.like(err, { code: 'INVALID_INPUT', status: 422, details: { invocation: 0, task: 'echo-0ms', executorDetails: [{ path: 'service_time_ms' }] } });
  t.regex(err!.message, /^task echo-0ms failed: echo request: service_time_ms: /);
  t.true(await allZero(store));
});

test.serial('the deadline cancels a slow graph with DEADLINE_EXCEEDED and aborts the executor request', async (t) => {
  const busy = shared[0];
  const store = new MemoryStore();
  const slow = echo(SLOW, 'slow');
  await deployTask(store, slow.task, [{ url: busy!.url, executorId: 'slowpoke' }]);
  const pending = dispatchGraph(new TaskGraph([slow]), { deadline: Date.now() + 5000 }, { store });
  await waitUntil('the call to arrive', async () => (await busy!.info()).inFlight === 1);
  const err = await t.throwsAsync<DispatcherError>(pending);
  t.like(err, { code: 'DEADLINE_EXCEEDED', status: 504 });
  t.regex(err!.message, /while waiting for invocation 0 \(echo-30000ms\)/);
  t.false(JSON.stringify(err).includes('slowpoke'), 'the executor id stays internal');
  await waitUntil('the executor request to be aborted', async () => (await busy!.info()).inFlight === 0);
  t.true(await allZero(store));
});

test('the deadline also ends a stream that is still being read, and closes the executor connection', async (t) => {
  const hung = await startBrokenStreamExecutor([{ echo: 'a', index: 0 }], 'stall');
  t.teardown(() => hung.close());
  const store = new MemoryStore();
  const s = echoStream(0, 'a', 5);
  await deployTask(store, s.task, [{ url: hung.url, executorId: 'hung' }]);
  const result = await dispatchGraph(new TaskGraph([s]), { deadline: Date.now() + 4000 }, { store });
  const lines = result.stream![Symbol.asyncIterator]();
  t.like(await lines.next(), { done: false });
  const err = await t.throwsAsync<DispatcherError>(lines.next());
  t.like(err, { code: 'DEADLINE_EXCEEDED', details: { pending: [{ task: 'echo-0ms' }] } });
  await waitUntil('the executor connection to close', () => hung.open() === 0);
  t.true(await allZero(store));
});

test.serial('a deadline already past fails before any executor is called', async (t) => {
  const idle = shared[0]!;
  const store = new MemoryStore();
  const a = echo(0, 'a');
  await deployTask(store, a.task, [{ url: idle.url }]);
  const served = (await idle.info()).served;
  await t.throwsAsync(dispatchGraph(new TaskGraph([a]), { deadline: Date.now() - 1 }, { store }), { instanceOf: Error, message: /deadline/ });
  t.is((await idle.info()).served, served);
  t.true(await allZero(store));
});

test.serial('the caller aborting cancels the graph and the executor request', async (t) => {
  const busy = shared[0];
  const store = new MemoryStore();
  const slow = echo(SLOW, 'slow');
  await deployTask(store, slow.task, [{ url: busy!.url }]);
  const caller = new AbortController();
  const pending = dispatchGraph(new TaskGraph([slow]), { deadline: inFive(), signal: caller.signal }, { store });
  await waitUntil('the call to arrive', async () => (await busy!.info()).inFlight === 1);
  caller.abort(new Error('client went away'));
  await t.throwsAsync(pending, { message: /dispatch cancelled: client went away/ });
  await waitUntil('the executor request to be aborted', async () => (await busy!.info()).inFlight === 0);
  t.true(await allZero(store));
});

test('a stream that breaks mid-way makes the stream throw TASK_FAILED after the lines that arrived', async (t) => {
  const flaky = await startBrokenStreamExecutor([{ echo: 'a', index: 0 }, { echo: 'a', index: 1 }]);
  t.teardown(() => flaky.close());
  const store = new MemoryStore();
  const s = echoStream(0, 'a', 5);
  await deployTask(store, s.task, [{ url: flaky.url, executorId: 'flaky' }]);
  const result = await dispatchGraph(new TaskGraph([s]), { deadline: inFive() }, { store });
  const seen: string[] = [];
  const err = await t.throwsAsync<DispatcherError>(async () => {
    for await (const line of result.stream!) seen.push(line);
  });
  t.is(seen.length, 2);
  t.like(err, { code: 'TASK_FAILED', details: { task: 'echo-0ms' } });
  t.regex(err!.message, /stream broke/);
  t.true(await allZero(store));
});

test('a deadline beyond the range of one timer (30 days) does not end the graph early', async (t) => {
  const store = new MemoryStore();
  const a = echo(0, 'patient');
  await deployTask(store, a.task, [{ url: shared[1]!.url }]);
  const result = await dispatchGraph(new TaskGraph([a]), { deadline: Date.now() + 30 * 24 * 3600_000 }, { store });
  t.deepEqual(result.outputs, [{ echo: 'patient' }]);
});
