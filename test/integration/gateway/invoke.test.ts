import test from 'ava';
import { DEADLINE_HEADER } from '../../../functions/sdk/index.js';
import { ECHO_APP, TEST_ADMIN_TOKEN, echoAppSource, startPlatform, type TestPlatform } from '../../helpers/platform.js';

// The admin token in the environment of the control plane, as `cornserve up` usually gets it: user code must not see it.
const SECRET = 'token-in-the-environment';
const NOSY_APP = `
import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
if (process.env.CORNSERVE_ADMIN_TOKEN) throw new Error('the check process sees the admin token');
export default defineApp({
  name: 'nosy', tasks: {}, request: z.object({}), response: z.object({ token: z.string() }),
  async serve() { return { token: process.env.CORNSERVE_ADMIN_TOKEN ?? '' }; },
});`;

let p: TestPlatform;
test.before(async () => {
  process.env.CORNSERVE_ADMIN_TOKEN = SECRET;
  p = await startPlatform({ devices: 2, bodyLimitBytes: LIMIT });
  await p.register(ECHO_APP);
  await p.register(SLOW_APP);
});
test.after.always(async () => {
  await p?.stop();
});

const SLOW_APP = echoAppSource('slow', 1500);
/** Above the 1 MiB the echo executor used to take on its own: the gateway's limit must hold on every hop. */
const LIMIT = 2 * 1024 * 1024;

type ErrorBody = { error: { code: string; message: string; details?: Array<{ path: string; message: string }> } };

test('a JSON invocation returns the response', async (t) => {
  const res = await p.invoke('echo', { text: 'hello' });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { echo: 'hello' });
});

test('a streaming invocation returns one NDJSON line per chunk', async (t) => {
  const res = await p.invoke('echo', { text: 'hi', chunks: 4 });
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'application/x-ndjson');
  const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l) as unknown);
  t.deepEqual(lines, [0, 1, 2, 3].map((index) => ({ echo: 'hi', index })));
});

test('the app can be invoked by its id as well as its name', async (t) => {
  const id = p.apps.resolve('echo').appId;
  const res = await p.invoke(id, { text: 'by id' });
  t.deepEqual(await res.json(), { echo: 'by id' });
});

test('an invalid request is a 422 with the zod issues', async (t) => {
  const res = await p.invoke('echo', { text: 42, chunks: -1 });
  t.is(res.status, 422);
  const body = (await res.json()) as ErrorBody;
  t.is(body.error.code, 'INVALID_INPUT');
  t.deepEqual(body.error.details!.map((d) => d.path).sort(), ['chunks', 'text']);
});

test('an unknown app is a 404', async (t) => {
  const res = await p.invoke('no-such-app', { text: 'x' });
  t.is(res.status, 404);
  t.is(((await res.json()) as ErrorBody).error.code, 'APP_NOT_FOUND');
});

test.serial('a body just under the gateway limit passes every hop (app function, dispatcher, executor) and is echoed', async (t) => {
  const frame = JSON.stringify({ request_data: { text: '' } }).length;
  const text = 'x'.repeat(LIMIT - frame - 16);
  const res = await p.invoke('echo', { text });
  t.is(res.status, 200, res.status === 200 ? '' : (await res.clone().text()).slice(0, 300));
  t.is(((await res.json()) as { echo: string }).echo.length, text.length);
});

test('an oversized body is a 413 at the gateway', async (t) => {
  const res = await p.invoke('echo', { text: 'x'.repeat(LIMIT) });
  t.is(res.status, 413);
  t.is(((await res.json()) as ErrorBody).error.code, 'PAYLOAD_TOO_LARGE');
});

test('a text/plain invocation body is a 415 saying to send JSON', async (t) => {
  const res = await fetch(`${p.gatewayUrl}/app/invoke/echo`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"request_data":{"text":"x"}}' });
  t.is(res.status, 415);
  const body = (await res.json()) as ErrorBody;
  t.is(body.error.code, 'UNSUPPORTED_MEDIA_TYPE');
  t.regex(body.error.message, /application\/json/);
});

test('a form-encoded invocation body (curl -d without -H) is a 415', async (t) => {
  const res = await fetch(`${p.gatewayUrl}/app/invoke/echo`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '{"request_data":{"text":"x"}}' });
  t.is(res.status, 415);
  t.is(((await res.json()) as ErrorBody).error.code, 'UNSUPPORTED_MEDIA_TYPE');
});

test('a text/plain body on the JSON routes (register, tasks/invoke) is a 415', async (t) => {
  const register = await fetch(`${p.gatewayUrl}/app/register`, { method: 'POST', headers: { authorization: `Bearer ${TEST_ADMIN_TOKEN}`, 'content-type': 'text/plain' }, body: JSON.stringify({ source: 'x' }) });
  const graph = await fetch(`${p.gatewayUrl}/tasks/invoke`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
  t.deepEqual([register.status, graph.status], [415, 415]);
});

test('an OpenAI chat request with a form body is a 415 in OpenAI\'s error shape', async (t) => {
  const res = await fetch(`${p.gatewayUrl}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'model=echo' });
  t.is(res.status, 415);
  t.like(await res.json(), { error: { code: 'unsupported_media_type', type: 'invalid_request_error' } });
});

test('a request past its deadline (?timeout_ms) is a 504', async (t) => {
  const res = await p.invoke('slow', { text: 'x' }, { timeoutMs: 300 });
  t.is(res.status, 504);
  t.is(((await res.json()) as ErrorBody).error.code, 'DEADLINE_EXCEEDED');
});

test('a deadline given in the header is honoured', async (t) => {
  const res = await p.invoke('slow', { text: 'x' }, { headers: { [DEADLINE_HEADER]: String(Date.now() + 300) } });
  t.is(res.status, 504);
});

test('a malformed deadline header is a 400', async (t) => {
  const res = await p.invoke('echo', { text: 'x' }, { headers: { [DEADLINE_HEADER]: 'tomorrow' } });
  t.is(res.status, 400);
});

test('POST /tasks/invoke runs a task graph through the dispatcher', async (t) => {
  const [task] = await p.store.listTasks();
  const graph = {
    invocations: [{ task_class: 'EchoTask', task: { id: 't1', descriptor: null, config: (task!.task as { config: unknown }).config }, input: { text: 'graph' }, output: { echo: '' } }],
    is_streaming: false,
  };
  const res = await fetch(`${p.gatewayUrl}/tasks/invoke`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(graph) });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), [{ echo: 'graph' }]);
});

test('GET /tasks/list shows the deployed tasks with their executors', async (t) => {
  const tasks = (await (await fetch(`${p.gatewayUrl}/tasks/list`)).json()) as Array<{ name: string; state: string; executors: unknown[] }>;
  t.deepEqual(tasks.map((x) => x.name).sort(), ['echo-0ms', 'echo-1500ms']);
  t.true(tasks.every((x) => x.state === 'ready' && x.executors.length === 1));
});

test('a scale of 0 devices is a 400', async (t) => {
  const res = await p.admin('/task/scale', { task_id: 'whatever', num_devices: 0 });
  t.is(res.status, 400);
});

test('GET /metrics counts invocations per app and errors by code', async (t) => {
  await p.invoke('echo', { text: 'count me' });
  await p.invoke('echo', { text: 1 });
  const text = await (await fetch(`${p.gatewayUrl}/metrics`)).text();
  t.regex(text, /cornserve_gateway_requests_total\{app="echo",status="200"\} [1-9]/);
  t.regex(text, /cornserve_gateway_request_duration_seconds_bucket\{le="[^"]+",app="echo"\}/);
  t.regex(text, /cornserve_gateway_errors_total\{code="INVALID_INPUT"\} [1-9]/);
  t.regex(text, /cornserve_task_executors\{task_id="echobasetask-[0-9a-f]+",state="ready"\} 1/);
  t.regex(text, /cornserve_gateway_in_flight_requests\{app="echo"\} 0/);
});

test('user code never sees the admin token: not when checked, not when serving', async (t) => {
  await p.register(NOSY_APP); // throws if the check process saw it
  const res = await p.invoke('nosy', {});
  t.deepEqual(await res.json(), { token: '' });
});

test('GET /health answers', async (t) => {
  t.is((await fetch(`${p.gatewayUrl}/health`)).status, 200);
});

// Serial (ava runs these before the concurrent tests): the metrics test above expects no echo call in flight.
test.serial('GET /metrics counts invocations in http_requests_total under the invoke route with their status', async (t) => {
  await p.invoke('echo', { text: 'count me too' });
  await p.invoke('echo', { text: 2 });
  const text = await (await fetch(`${p.gatewayUrl}/metrics`)).text();
  t.regex(text, /cornserve_gateway_http_requests_total\{route="\/app\/invoke\/:app_id",method="POST",status="200"\} [1-9]/);
  t.regex(text, /cornserve_gateway_http_requests_total\{route="\/app\/invoke\/:app_id",method="POST",status="422"\} [1-9]/);
});

test.serial('an invocation under another spelling of the path (trailing slash, upper case) is served as well', async (t) => {
  for (const path of ['/app/invoke/echo/', '/APP/invoke/echo']) {
    const res = await fetch(`${p.gatewayUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"request_data":{"text":"spelled"}}' });
    t.deepEqual(await res.json(), { echo: 'spelled' }, path);
  }
});

test.serial('an app id with a malformed %-escape is a 400, not a crash', async (t) => {
  const res = await fetch(`${p.gatewayUrl}/app/invoke/%E0%A4%A`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"request_data":{}}' });
  t.is(res.status, 400);
});
