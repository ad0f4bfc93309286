import test from 'ava';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { DEADLINE_HEADER, defineApp, type App, type GraphDispatcher } from '../../../../functions/sdk/index.js';
import { buildFunctionServer } from '../../../../functions/runtime/server.js';
import { logger } from '../../../../lib/log.js';
import { sleep } from '../../../../lib/wait.js';
import { hopBodyLimitBytes } from '../../../../lib/body-limit.js';

// Apps without unit tasks: serve() never dispatches, so a dispatcher that refuses every graph is enough.
const noDispatch: GraphDispatcher = {
  dispatch: () => Promise.reject(new Error('these apps call no tasks')),
};

const upper = defineApp({
  name: 'upper',
  tasks: {},
  request: z.object({ text: z.string(), lines: z.number().int().optional(), failAt: z.number().int().optional(), sleepMs: z.number().optional() }),
  response: z.object({ text: z.string() }),
  async serve(req) {
    if (req.sleepMs) await sleep(req.sleepMs);
    if (req.failAt === -1) throw new Error('refused before streaming');
    if (req.lines === undefined) return { text: req.text.toUpperCase() };
    return (async function* () {
      for (let i = 0; i < req.lines!; i++) {
        if (i === req.failAt) throw new Error(`line ${i} failed`);
        yield { text: `${req.text.toUpperCase()}-${i}` };
      }
    })();
  },
});

const badResponse = defineApp({
  name: 'bad-response',
  tasks: {},
  request: z.object({}),
  response: z.object({ n: z.number() }),
  async serve() {
    return { n: 'not a number' } as unknown as { n: number };
  },
});

const servers: Server[] = [];
test.after.always(() => servers.forEach((s) => s.close()));

async function start(app: App, bodyLimitBytes?: number): Promise<string> {
  const server = buildFunctionServer({ app, appId: 'app-test', dispatcher: noDispatch, log: logger('test').child({}, { level: 'silent' }), ...(bodyLimitBytes ? { bodyLimitBytes } : {}) });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let url: string;
test.before(async () => {
  url = await start(upper);
});

const invoke = (base: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}/invoke`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });

test('a valid request gets the JSON response', async (t) => {
  const res = await invoke(url, { request_data: { text: 'hi' } });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { text: 'HI' });
});

test('an invalid request is a 422 naming the field', async (t) => {
  const res = await invoke(url, { request_data: { text: 3 } });
  t.is(res.status, 422);
  const body = (await res.json()) as { error: { code: string; details: Array<{ path: string }> } };
  t.is(body.error.code, 'INVALID_INPUT');
  t.deepEqual(body.error.details.map((d) => d.path), ['text']);
});

test('a body without request_data is a 422', async (t) => {
  const res = await invoke(url, { text: 'hi' });
  t.is(res.status, 422);
});

test('a body that is not JSON is a 400', async (t) => {
  const res = await invoke(url, '{nope');
  t.is(res.status, 400);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'BAD_JSON');
});

test('a streaming serve() is sent as NDJSON, one chunk per line', async (t) => {
  const res = await invoke(url, { request_data: { text: 'ab', lines: 3 } });
  t.is(res.headers.get('content-type'), 'application/x-ndjson');
  const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l) as unknown);
  t.deepEqual(lines, [{ text: 'AB-0' }, { text: 'AB-1' }, { text: 'AB-2' }]);
});

test('an error after streaming started ends the stream with an error line', async (t) => {
  const res = await invoke(url, { request_data: { text: 'x', lines: 3, failAt: 2 } });
  t.is(res.status, 200);
  const lines = (await res.text()).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.is(lines.length, 3);
  t.deepEqual(lines[1], { text: 'X-1' });
  t.like(lines[2], { error: { code: 'APP_ERROR' } });
  t.regex((lines[2] as { error: { message: string } }).error.message, /line 2 failed/);
});

test('an error before the first chunk is an error reply, not a stream', async (t) => {
  const res = await invoke(url, { request_data: { text: 'x', lines: 3, failAt: 0 } });
  t.is(res.status, 500);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'APP_ERROR');
});

test('a serve() that throws is a 500 with the app\'s message', async (t) => {
  const res = await invoke(url, { request_data: { text: 'x', failAt: -1 } });
  t.is(res.status, 500);
  t.regex(((await res.json()) as { error: { message: string } }).error.message, /refused before streaming/);
});

test('a serve() still running at the deadline is answered with 504', async (t) => {
  const res = await invoke(url, { request_data: { text: 'x', sleepMs: 5_000 } }, { [DEADLINE_HEADER]: String(Date.now() + 200) });
  t.is(res.status, 504);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'DEADLINE_EXCEEDED');
});

test('a deadline past setTimeout\'s range (30 days away) lets serve() finish instead of a 504 at once', async (t) => {
  const res = await invoke(url, { request_data: { text: 'far', sleepMs: 50 } }, { [DEADLINE_HEADER]: String(Date.now() + 30 * 24 * 3600_000) });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { text: 'FAR' });
});

test('a response that does not match the response schema is a 500 naming the field', async (t) => {
  const res = await invoke(await start(badResponse), { request_data: {} });
  t.is(res.status, 500);
  const body = (await res.json()) as { error: { code: string; details: Array<{ path: string }> } };
  t.is(body.error.code, 'APP_RESPONSE_INVALID');
  t.is(body.error.details[0]!.path, 'n');
});

test("a body over the function's limit (the platform's, with room for framing: lib/body-limit.ts) is a 413", async (t) => {
  const small = await start(upper, 1024);
  const res = await invoke(small, { request_data: { text: 'x'.repeat(hopBodyLimitBytes(1024)) } });
  t.is(res.status, 413);
});

test("a body just over the platform's limit still passes the function (the gateway's limit is the smallest)", async (t) => {
  const small = await start(upper, 1024);
  const res = await invoke(small, { request_data: { text: 'x'.repeat(1100) } });
  t.is(res.status, 200);
});

test('GET /health answers with the app name', async (t) => {
  const res = await fetch(`${url}/health`);
  t.is(res.status, 200);
  t.like(await res.json(), { status: 'ok', app: 'upper' });
});
