/**
 * The function link (lib/function-link.ts) between forward() (control/gateway/proxy.ts) and an app function:
 * requests multiplexed on one connection, streams with per-request back-pressure, cancellation in both directions,
 * a function that goes away mapped like a dropped HTTP connection, and HTTP kept for a function that does not upgrade.
 */
import test from 'ava';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { currentRequestScope, defineApp } from '../../../../functions/sdk/index.js';
import { sleep, waitUntil } from '../../../../lib/wait.js';
import { linkGateway, FunctionLinks, scriptedLinkFunction, silentLog, startFunctionServer } from '../../../helpers/function-link.js';

const closers: Array<() => unknown> = [];
test.after.always(async () => {
  for (const close of closers.reverse()) await close();
});

/** Waits `sleepMs`, then answers (or streams `lines` lines); records how its request ended. */
const started: string[] = [];
const aborted: string[] = [];
/** Stream lines produced, by request text. */
const produced = new Map<string, number>();
const app = defineApp({
  name: 'upper',
  tasks: {},
  request: z.object({ text: z.string(), sleepMs: z.number().optional(), lines: z.number().optional(), failAt: z.number().optional(), pad: z.number().optional() }),
  response: z.object({ text: z.string() }),
  async serve(req) {
    started.push(req.text);
    const signal = currentRequestScope()?.signal;
    signal?.addEventListener('abort', () => aborted.push(`${req.text}: ${(signal.reason as Error).message}`), { once: true });
    if (req.sleepMs) await sleep(req.sleepMs);
    if (req.lines === undefined) return { text: req.text.toUpperCase() };
    return (async function* () {
      for (let i = 0; i < req.lines!; i++) {
        if (i === req.failAt) throw new Error(`line ${i} failed at http://127.0.0.1:9/secret`);
        produced.set(req.text, (produced.get(req.text) ?? 0) + 1);
        yield { text: `${req.text.toUpperCase()}-${i}${'.'.repeat(req.pad ?? 0)}` };
      }
    })();
  },
});

async function setup(timeoutMs?: number) {
  const fn = await startFunctionServer(app);
  const links = new FunctionLinks(silentLog());
  const gw = await linkGateway(links, fn.url, timeoutMs);
  closers.push(() => fn.close(), () => links.close(), () => gw.close(0));
  const post = (body: unknown, init: RequestInit = {}) =>
    fetch(`${gw.url}/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ request_data: body }), ...init });
  return { fn, links, gw, post };
}

/** A gateway whose function is scripted frame by frame (the test plays the function's side of the link). */
async function setupScripted(timeoutMs?: number) {
  const fake = await scriptedLinkFunction();
  const links = new FunctionLinks(silentLog());
  const gw = await linkGateway(links, fake.url, timeoutMs);
  closers.push(() => fake.close(), () => links.close(), () => gw.close(0));
  return { fake, gw };
}

test('a JSON invocation over the link gets the reply with its status, type and length', async (t) => {
  const { fn, post } = await setup();
  const res = await post({ text: 'hi' });
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'application/json');
  t.is(res.headers.get('content-length'), '13');
  t.deepEqual(await res.json(), { text: 'HI' });
  t.is(fn.upgrades(), 1);
});

test('concurrent invocations share one link and each gets its own reply, in the order they finish', async (t) => {
  const { fn, post } = await setup();
  const finished: string[] = [];
  const replies = await Promise.all([['slow', 150], ['mid', 60], ['fast', 0]].map(async ([text, sleepMs]) => {
    const res = await post({ text, sleepMs });
    const body = (await res.json()) as { text: string };
    finished.push(body.text);
    return body.text;
  }));
  t.deepEqual(replies, ['SLOW', 'MID', 'FAST']);
  t.deepEqual(finished, ['FAST', 'MID', 'SLOW']);
  t.is(fn.upgrades(), 1);
});

test("an error reply over the link keeps its status and code; a stream's error line is redacted", async (t) => {
  const { post } = await setup();
  const bad = await post({ text: 3 });
  t.is(bad.status, 422);
  t.is(((await bad.json()) as { error: { code: string } }).error.code, 'INVALID_INPUT');
  const res = await post({ text: 'ab', lines: 3, failAt: 2 });
  t.is(res.status, 200);
  const lines = (await res.text()).trim().split('\n');
  t.deepEqual(lines.slice(0, 2).map((l) => JSON.parse(l) as unknown), [{ text: 'AB-0' }, { text: 'AB-1' }]);
  t.regex(lines[2]!, /"code":"APP_ERROR"/);
  t.false(lines[2]!.includes('127.0.0.1'), lines[2]);
});

test('a stream whose reader stops is paused on the function, and resumes when read', async (t) => {
  const { links, fn } = await setup();
  const total = 4_000;
  const link = (await links.get(fn.url))!;
  const call = link.call({ deadline: Date.now() + 60_000, trace: {} });
  const reply = await new Promise<import('../../../../control/gateway/function-link.js').LinkReply>((resolve, reject) => {
    call.on('response', resolve).on('error', reject);
    call.end(JSON.stringify({ request_data: { text: 'p', lines: total, pad: 4_000 } }));
  });
  // Nobody reads: the function stops producing once the reply's buffer and the connection's are full.
  let last = -1;
  await waitUntil('the function stopped producing', () => {
    const now = produced.get('p') ?? 0;
    const still = now === last;
    last = now;
    return still && now > 0;
  }, { timeoutMs: 30_000, intervalMs: 200 });
  t.true(last < total, `produced ${last} of ${total} lines`);
  let lines = 0;
  for await (const chunk of reply) lines += String(chunk).split('\n').length - 1;
  t.is(lines, total);
  t.is(produced.get('p'), total);
});

test("the client going away cancels the request on the function: serve()'s signal aborts", async (t) => {
  const { post } = await setup();
  const gone = new AbortController();
  const pending = post({ text: 'leaver', sleepMs: 10_000 }, { signal: gone.signal });
  await waitUntil('serve() started', () => started.includes('leaver'));
  gone.abort();
  await pending.then(() => t.fail('the request should have been aborted'), () => {});
  await waitUntil('serve() saw the abort', () => aborted.some((a) => a.startsWith('leaver: the client disconnected')));
  t.pass();
});

test('past the deadline the gateway answers 504 itself and cancels the request on the function', async (t) => {
  const { fake, gw } = await setupScripted(200);
  const res = await fetch(`${gw.url}/x`, { method: 'POST', body: '{"request_data":{}}' });
  t.is(res.status, 504);
  const invoke = await fake.next('invoke');
  const cancel = await fake.next('cancel');
  t.is(cancel.id, invoke.id);
  t.regex(cancel.reason, /deadline/i);
});

test('a function that drops the link before replying fails the request like a dropped connection (onFailure)', async (t) => {
  const { fake, gw } = await setupScripted();
  const pending = fetch(`${gw.url}/x`, { method: 'POST', body: '{"request_data":{}}' });
  await fake.next('invoke');
  fake.socket().destroy();
  const res = await pending;
  t.is(res.status, 500); // the test's onFailure hands the error back as it is
  t.is(gw.failures.length, 1);
  t.regex(gw.failures[0]!.message, /connection to the app function closed/);
  // The next call dials a new link.
  const next = fetch(`${gw.url}/x`, { method: 'POST', body: '{"request_data":{}}' });
  const again = await fake.next('invoke');
  fake.send({ t: 'head', id: again.id, status: 200, headers: { 'content-type': 'application/json' }, end: true }, '{"ok":1}');
  t.deepEqual(await (await next).json(), { ok: 1 });
});

test('a function that drops the link mid-stream ends the stream with an error line', async (t) => {
  const { fake, gw } = await setupScripted();
  const pending = fetch(`${gw.url}/x`, { method: 'POST', body: '{"request_data":{}}' });
  const invoke = await fake.next('invoke');
  fake.send({ t: 'head', id: invoke.id, status: 200, headers: { 'content-type': 'application/x-ndjson' } });
  fake.send({ t: 'data', id: invoke.id }, '{"n":1}\n');
  const res = await pending;
  t.is(res.status, 200);
  const reader = res.body!.getReader();
  t.is(new TextDecoder().decode((await reader.read()).value), '{"n":1}\n');
  fake.socket().destroy();
  let rest = '';
  for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
  t.regex(rest, /^\{"error":\{"code":"[A-Z_]+","message":"[^"]*closed mid-reply/);
  t.is(gw.failures.length, 0); // not a failure before the reply: the stream already started
});

test('an error reply that came whole in its head frame reaches the client with its status and code, its internal address redacted', async (t) => {
  const { fake, gw } = await setupScripted();
  const pending = fetch(`${gw.url}/x`, { method: 'POST', body: '{"request_data":{}}' });
  const invoke = await fake.next('invoke');
  const error = { error: { code: 'APP_ERROR', message: 'fetching http://127.0.0.1:9/secret failed' } };
  fake.send({ t: 'head', id: invoke.id, status: 500, headers: { 'content-type': 'application/json', 'retry-after': '3' }, end: true }, JSON.stringify(error));
  const res = await pending;
  t.is(res.status, 500);
  t.is(res.headers.get('retry-after'), '3');
  const body = (await res.json()) as typeof error;
  t.is(body.error.code, 'APP_ERROR');
  t.false(body.error.message.includes('127.0.0.1'), body.error.message);
});

test('an NDJSON reply that came whole in its head frame is passed on line by line, its error line redacted', async (t) => {
  const { fake, gw } = await setupScripted();
  const pending = fetch(`${gw.url}/x`, { method: 'POST', body: '{"request_data":{}}' });
  const invoke = await fake.next('invoke');
  const lines = '{"n":1}\n{"n":2}\n{"error":{"code":"APP_ERROR","message":"at http://127.0.0.1:9/secret"}}\n';
  fake.send({ t: 'head', id: invoke.id, status: 200, headers: { 'content-type': 'application/x-ndjson' }, end: true }, lines);
  const res = await pending;
  t.is(res.status, 200);
  t.is(res.headers.get('content-type'), 'application/x-ndjson');
  const got = (await res.text()).trim().split('\n');
  t.deepEqual(got.slice(0, 2).map((l) => JSON.parse(l) as unknown), [{ n: 1 }, { n: 2 }]);
  t.regex(got[2]!, /"code":"APP_ERROR"/);
  t.false(got[2]!.includes('127.0.0.1'), got[2]);
  t.is(got.length, 3);
});

test('frames for a request the gateway no longer waits for are ignored; other requests on the link go on', async (t) => {
  const { fake, gw } = await setupScripted(150);
  const late = await fetch(`${gw.url}/x`, { method: 'POST', body: '{"request_data":{}}' });
  t.is(late.status, 504);
  const first = await fake.next('invoke');
  await fake.next('cancel');
  fake.send({ t: 'head', id: first.id, status: 200, headers: { 'content-type': 'application/json' }, end: true }, '{"late":1}');
  const pending = fetch(`${gw.url}/x`, { method: 'POST', body: '{"request_data":{}}' });
  const second = await fake.next('invoke');
  t.not(second.id, first.id);
  fake.send({ t: 'head', id: second.id, status: 200, headers: { 'content-type': 'application/json' }, end: true }, '{"second":1}');
  t.deepEqual(await (await pending).json(), { second: 1 });
});

test('a function that does not take the link (no upgrade) is called over HTTP, and not asked again', async (t) => {
  let upgradesAsked = 0;
  const plain = createServer((req, res) => {
    if (req.headers.upgrade) upgradesAsked++;
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"over":"http"}'));
  });
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
  const links = new FunctionLinks(silentLog());
  const gw = await linkGateway(links, url);
  closers.push(() => plain.close(), () => links.close(), () => gw.close(0));
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${gw.url}/x`, { method: 'POST', body: '{"request_data":{}}' });
    t.deepEqual(await res.json(), { over: 'http' });
  }
  t.is(upgradesAsked, 1);
  t.is(links.get(url), undefined);
});

test("a request slower than the dial's timeout (2 s) is answered on the same link: the dial's timeout ends with the upgrade", async (t) => {
  const { fn, post } = await setup();
  t.is(((await (await post({ text: 'quick' })).json()) as { text: string }).text, 'QUICK');
  const res = await post({ text: 'slow', sleepMs: 2_500 });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { text: 'SLOW' });
  t.is(fn.upgrades(), 1);
});
