/**
 * The dispatcher's HTTP server: CloudEvents in binary mode and POST /graph, against REAL echo executors.
 */
import test from 'ava';
import { CloudEvent, HTTP, Mode, emitterFor, httpTransport } from 'cloudevents';
import { Registry } from 'prom-client';
import { DataForward, DEADLINE_HEADER, TaskGraph, readDispatchResponse, type TaskGraphJSON, type TaskInvocation, TASKGRAPH_EVENT_TYPE } from '../../../functions/sdk/index.js';
import { EchoStreamTask, EchoTask } from '../../../functions/tasks/echo.js';
import { EncoderTask } from '../../../functions/tasks/encoder.js';
import { startDispatcher, type RunningDispatcher } from '../../../control/dispatcher/server.js';
import { MemoryStore } from '../../../control/store/memory.js';
import { waitUntil } from '../../../lib/wait.js';
import { deployTask, outstandingByExecutor, startBrokenStreamExecutor, startEchoExecutor, type EchoExecutor } from '../../helpers/executors.js';

const echo = (ms: number, text: string): TaskInvocation => ({ task: new EchoTask({ serviceTimeMs: ms }), input: { text }, output: { echo: '' } });
const echoStream = (ms: number, text: string, chunks: number): TaskInvocation => {
  const task = new EchoStreamTask({ serviceTimeMs: ms });
  return { task, input: { text, chunks }, output: task.makeRecordOutput() };
};
const graphJson = (...invocations: TaskInvocation[]): TaskGraphJSON => new TaskGraph(invocations).toJSON();

interface Fixture {
  store: MemoryStore;
  registry: Registry;
  dispatcher: RunningDispatcher;
}

let executors: EchoExecutor[] = [];
test.before(async () => {
  executors = await Promise.all([startEchoExecutor(), startEchoExecutor()]);
});
test.after.always(async () => {
  await Promise.all(executors.map((e) => e.stop()));
});

/** A dispatcher of its own (own Store, own metrics) with the echo tasks deployed on the shared executors. */
async function dispatcherFor(t: { teardown(fn: () => Promise<void>): void }, ...invocations: TaskInvocation[]): Promise<Fixture> {
  const store = new MemoryStore();
  for (const inv of invocations) await deployTask(store, inv.task, executors.map((e) => ({ url: e.url })));
  const registry = new Registry();
  const dispatcher = await startDispatcher({ store, registry });
  t.teardown(() => dispatcher.close(100));
  return { store, registry, dispatcher };
}

/** POSTs a task-graph CloudEvent in binary mode. */
function postEvent(url: string, data: unknown, extra: { type?: string; deadline?: number | string; source?: string; traceparent?: string } = {}, signal?: AbortSignal) {
  const ev = new CloudEvent({
    type: extra.type ?? TASKGRAPH_EVENT_TYPE,
    source: extra.source ?? '/apps/app-test',
    datacontenttype: 'application/json',
    data,
    deadline: extra.deadline ?? Date.now() + 60_000,
    ...(extra.traceparent ? { traceparent: extra.traceparent } : {}),
  });
  const msg = HTTP.binary(ev);
  const headers = Object.fromEntries(Object.entries(msg.headers).map(([k, v]) => [k, String(v)]));
  return fetch(url, { method: 'POST', headers, body: msg.body as string, ...(signal ? { signal } : {}) });
}

const allZero = async (store: MemoryStore) => Object.values(await outstandingByExecutor(store)).every((n) => n === 0);

test('a CloudEvent sent with the cloudevents binary-mode emitter gets the outputs array back', async (t) => {
  const a = echo(0, 'hello');
  const { dispatcher } = await dispatcherFor(t, a);
  const emit = emitterFor(httpTransport(dispatcher.url), { mode: Mode.BINARY });
  const reply = (await emit(
    new CloudEvent({ type: TASKGRAPH_EVENT_TYPE, source: '/apps/app-1', datacontenttype: 'application/json', data: graphJson(a), deadline: Date.now() + 60_000 }),
  )) as { body: string };
  t.deepEqual(JSON.parse(reply.body), [{ echo: 'hello' }]);
});

test('a streaming graph replies NDJSON that readDispatchResponse reads as outputs plus the stream', async (t) => {
  const a = echo(0, 'head');
  const s = echoStream(0, 'tail', 3);
  const { dispatcher, store } = await dispatcherFor(t, a);
  const res = await postEvent(dispatcher.url, graphJson(a, s));
  t.is(res.headers.get('content-type'), 'application/x-ndjson; charset=utf-8');
  const result = await readDispatchResponse(res);
  const lines: unknown[] = [];
  for await (const line of result.stream!) lines.push(JSON.parse(line));
  t.deepEqual({ outputs: result.outputs, lines }, { outputs: [{ echo: 'head' }, {}], lines: [0, 1, 2].map((index) => ({ echo: 'tail', index })) });
  t.true(await allZero(store));
});

test('a CloudEvent of another type is a 400', async (t) => {
  const a = echo(0, 'x');
  const { dispatcher } = await dispatcherFor(t, a);
  const res = await postEvent(dispatcher.url, graphJson(a), { type: 'com.example.other' });
  t.is(res.status, 400);
  t.like(await res.json(), { error: { code: 'EVENT_INVALID', message: `CloudEvent type must be ${TASKGRAPH_EVENT_TYPE}, got com.example.other` } });
});

test('a request that is not a CloudEvent is a 400', async (t) => {
  const a = echo(0, 'x');
  const { dispatcher } = await dispatcherFor(t, a);
  const res = await fetch(dispatcher.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(graphJson(a)) });
  t.is(res.status, 400);
  t.like(await res.json(), { error: { code: 'EVENT_INVALID' } });
});

test('an invalid task graph is a 422 naming the field', async (t) => {
  const a = echo(0, 'x');
  const { dispatcher } = await dispatcherFor(t, a);
  const bad = graphJson(a);
  (bad.invocations[0]!.input as { text: unknown }).text = 42;
  const res = await postEvent(dispatcher.url, bad);
  t.is(res.status, 422);
  const body = (await res.json()) as { error: { code: string; message: string } };
  t.is(body.error.code, 'INVALID_INPUT');
  t.regex(body.error.message, /invocations\.0\.input\.text/);
});

test('a graph whose forwards do not pair up is a 400 GRAPH_INVALID and nothing runs', async (t) => {
  const encoder = new EncoderTask({ modality: 'image', modelIds: ['m'] });
  const orphan = DataForward.tensor();
  const enc: TaskInvocation = { task: encoder, input: { model_id: 'm', data_urls: ['http://x/a.png'] }, output: { embeddings: [orphan] } };
  const { dispatcher, store } = await dispatcherFor(t, enc);
  const res = await postEvent(dispatcher.url, graphJson(enc));
  t.is(res.status, 400);
  const body = (await res.json()) as { error: { code: string; message: string } };
  t.is(body.error.code, 'GRAPH_INVALID');
  t.true(body.error.message.includes(orphan.id));
  t.true(await allZero(store));
});

test('a task that is not deployed is a 404 TASK_NOT_DEPLOYED', async (t) => {
  const { dispatcher } = await dispatcherFor(t);
  const res = await postEvent(dispatcher.url, graphJson(echo(0, 'x')));
  t.is(res.status, 404);
  t.like(await res.json(), { error: { code: 'TASK_NOT_DEPLOYED' } });
});

test('a task with no ready executor is a 503 NO_EXECUTOR with Retry-After', async (t) => {
  const store = new MemoryStore();
  const inv = echo(0, 'x');
  await deployTask(store, inv.task, [{ url: executors[0]!.url, state: 'failed' }]);
  const dispatcher = await startDispatcher({ store, registry: new Registry() });
  t.teardown(() => dispatcher.close(100));
  const res = await postEvent(dispatcher.url, graphJson(inv));
  t.is(res.status, 503);
  t.like(await res.json(), { error: { code: 'NO_EXECUTOR' } });
  t.is(res.headers.get('retry-after'), '5');
});

test('a deadline extension that is not epoch ms is a 400 DEADLINE_INVALID', async (t) => {
  const a = echo(0, 'x');
  const { dispatcher } = await dispatcherFor(t, a);
  const res = await postEvent(dispatcher.url, graphJson(a), { deadline: 'tomorrow' });
  t.is(res.status, 400);
  t.like(await res.json(), { error: { code: 'DEADLINE_INVALID' } });
});

test('a deadline extension in the past is a 504 DEADLINE_EXCEEDED', async (t) => {
  const a = echo(0, 'x');
  const { dispatcher } = await dispatcherFor(t, a);
  const res = await postEvent(dispatcher.url, graphJson(a), { deadline: Date.now() - 1000 });
  t.is(res.status, 504);
  t.like(await res.json(), { error: { code: 'DEADLINE_EXCEEDED' } });
});

test('POST /graph takes the plain graph JSON with the deadline header', async (t) => {
  const a = echo(0, 'plain');
  const { dispatcher } = await dispatcherFor(t, a);
  const res = await fetch(new URL('/graph', dispatcher.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', [DEADLINE_HEADER]: String(Date.now() + 60_000) },
    body: JSON.stringify(graphJson(a)),
  });
  t.deepEqual(await readDispatchResponse(res), { outputs: [{ echo: 'plain' }] });
});

test('POST /graph with a deadline header that is not a number is a 400', async (t) => {
  const a = echo(0, 'plain');
  const { dispatcher } = await dispatcherFor(t, a);
  const res = await fetch(new URL('/graph', dispatcher.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', [DEADLINE_HEADER]: 'soon' },
    body: JSON.stringify(graphJson(a)),
  });
  t.is(res.status, 400);
  t.like(await res.json(), { error: { code: 'DEADLINE_INVALID' } });
});

test('a stream that breaks mid-way ends the NDJSON reply with one {"error"} line naming the task, not the executor or its address', async (t) => {
  const s = echoStream(0, 'a', 5);
  const flaky = await startBrokenStreamExecutor([{ echo: 'a', index: 0 }]);
  t.teardown(() => flaky.close());
  const store = new MemoryStore();
  await deployTask(store, s.task, [{ url: flaky.url, executorId: 'flaky' }]);
  const dispatcher = await startDispatcher({ store });
  t.teardown(() => dispatcher.close(100));
  const res = await postEvent(dispatcher.url, graphJson(s));
  const text = await res.text();
  const lines = text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.is(lines.length, 3);
  t.deepEqual(lines.slice(0, 2), [[{}], { echo: 'a', index: 0 }]);
  t.like(lines[2], { error: { code: 'TASK_FAILED', details: { task: 'echo-0ms' } } });
  t.false(/flaky|127\.0\.0\.1|localhost/.test(text), text);
  t.true(await allZero(store));
});

test.serial('a client that disconnects cancels the executor call and releases the executor', async (t) => {
  const busy = executors[0]!; // serial tests run alone, before the concurrent ones
  const slow = echo(30_000, 'slow');
  const store = new MemoryStore();
  await deployTask(store, slow.task, [{ url: busy.url }]);
  const dispatcher = await startDispatcher({ store });
  t.teardown(() => dispatcher.close(100));
  const client = new AbortController();
  const pending = postEvent(dispatcher.url, graphJson(slow), {}, client.signal);
  await waitUntil('the executor call to arrive', async () => (await busy.info()).inFlight === 1);
  client.abort();
  await t.throwsAsync(pending, { any: true });
  await waitUntil('the executor call to be aborted', async () => (await busy.info()).inFlight === 0);
  await waitUntil('the lease to be released', () => allZero(store));
  t.pass();
});

test('GET /metrics counts requests, errors by code, and in-flight graphs per app and invocations per task', async (t) => {
  const a = echo(0, 'x');
  const { dispatcher, registry } = await dispatcherFor(t, a);
  await (await postEvent(dispatcher.url, graphJson(a), { source: '/apps/app-metrics' })).text();
  await (await postEvent(dispatcher.url, graphJson(echo(3, 'undeployed')), { source: '/apps/app-metrics' })).text();
  const text = await (await fetch(new URL('/metrics', dispatcher.url))).text();
  t.regex(text, /cornserve_dispatcher_requests_total\{app="app-metrics",route="cloudevent"\} 2/);
  t.regex(text, /cornserve_dispatcher_errors_total\{app="app-metrics",code="TASK_NOT_DEPLOYED"\} 1/);
  t.regex(text, /cornserve_dispatcher_in_flight_requests\{app="app-metrics"\} 0/);
  t.regex(text, /cornserve_dispatcher_in_flight_invocations\{task="echobasetask-[0-9a-f]{12}"\} 0/);
  t.regex(text, /cornserve_dispatcher_request_duration_seconds_count\{app="app-metrics",outcome="ok"\} 1/);
  t.is((await registry.getSingleMetric('cornserve_dispatcher_invocations_total')?.get())?.values[0]?.value, 1);
});

test('GET /health answers ok', async (t) => {
  const { dispatcher } = await dispatcherFor(t);
  const res = await fetch(new URL('/health', dispatcher.url));
  t.deepEqual([res.status, await res.json()], [200, { status: 'ok' }]);
});

test('completed executor calls leave each executor’s live latency and concurrency in the Store', async (t) => {
  const a = echo(30, 'live');
  const { dispatcher, store } = await dispatcherFor(t, a);
  for (let i = 0; i < 6; i++) {
    const res = await fetch(new URL('/graph', dispatcher.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', [DEADLINE_HEADER]: String(Date.now() + 60_000) },
      body: JSON.stringify(graphJson(a)),
    });
    t.deepEqual(await readDispatchResponse(res), { outputs: [{ echo: 'live' }] });
  }
  const stats = await waitUntil('live stats of both executors', async () => {
    const s = await store.listExecutorStats();
    return s.reduce((n, x) => n + x.samples, 0) === 6 ? s : undefined;
  }, { timeoutMs: 15_000, intervalMs: 100 });
  t.is(stats.length, 2); // least-outstanding routing rotated over both
  for (const s of stats) {
    t.true(s.latencyMs >= 30, `${s.latencyMs} ms: the echo's 30 ms service time at least`);
    t.is(s.concurrency, 1); // one call at a time
  }
});
