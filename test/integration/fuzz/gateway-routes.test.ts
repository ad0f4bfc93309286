/**
 * Property-based fuzzing of every public gateway route (fast-check): malformed JSON, wrong types, huge and
 * negative numbers, unicode, deep nesting, wrong content types, truncated bodies and streams. Every answer is a
 * 4xx JSON error with a code — never a 5xx, a crash or a hang (each request has a bounded wait). One real
 * platform (in-process `cornserve up` composition, an echo app with its app function and executor) for the file.
 */
import test from 'ava';
import fc from 'fast-check';
import { configureFuzz } from '../../helpers/fuzz.js';
import { connect } from 'node:net';
import WebSocket from 'ws';
import { ECHO_APP, startPlatform, TEST_ADMIN_TOKEN, type TestPlatform } from '../../helpers/platform.js';

configureFuzz();

const RUNS = 40;
const WAIT_MS = 20_000;
let p: TestPlatform;

test.before(async () => {
  p = await startPlatform();
  await p.register(ECHO_APP);
});
test.after.always(async () => {
  await p?.stop();
});

/** Routes that take a JSON body, with the admin token where they need one (so the body is what gets judged). */
const BODY_ROUTES: Array<{ method: string; path: string; admin?: boolean }> = [
  { method: 'POST', path: '/app/register', admin: true },
  { method: 'POST', path: '/app/invoke/echo' },
  { method: 'POST', path: '/v1/chat/completions' },
  { method: 'POST', path: '/tasks/invoke' },
  { method: 'POST', path: '/tasks/usage' },
  { method: 'DELETE', path: '/tasks/usage' },
  { method: 'POST', path: '/task/scale', admin: true },
  { method: 'POST', path: '/task/autoscale', admin: true },
  { method: 'POST', path: '/task/profile', admin: true },
  { method: 'POST', path: '/plans/apply', admin: true },
  { method: 'POST', path: '/tasks/register', admin: true },
];
const route = fc.constantFrom(...BODY_ROUTES);

interface Answer { status: number; contentType: string; text: string }

async function send(r: { method: string; path: string; admin?: boolean }, body: string | undefined, contentType = 'application/json'): Promise<Answer> {
  const res = await fetch(new URL(r.path, p.gatewayUrl), {
    method: r.method,
    headers: { ...(contentType ? { 'content-type': contentType } : {}), ...(r.admin ? { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } : {}) },
    ...(body === undefined ? {} : { body }),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
}

/** A 4xx whose body is `{error: {code, message}}` (ours: UPPER_CASE codes; the OpenAI route's: OpenAI's lower_case ones). */
function isJsonError(a: Answer): boolean {
  if (a.status < 400 || a.status >= 500 || !a.contentType.startsWith('application/json')) return false;
  try {
    const e = (JSON.parse(a.text) as { error?: { code?: unknown; message?: unknown } }).error;
    return typeof e?.code === 'string' && /^[A-Za-z][A-Za-z0-9_]*$/.test(e.code) && typeof e.message === 'string';
  } catch {
    return false;
  }
}
const shown = (a: Answer) => `HTTP ${a.status} ${a.contentType}: ${a.text.slice(0, 300)}`;

const expectJsonError = async (r: (typeof BODY_ROUTES)[number], body: string | undefined, contentType?: string) => {
  const a = await send(r, body, contentType);
  if (!isJsonError(a)) throw new Error(`${r.method} ${r.path} ${JSON.stringify(body?.slice(0, 120))} (${contentType ?? 'application/json'}) → ${shown(a)}`);
};

const unicodeText = fc.string({ unit: 'binary', maxLength: 40 });
/** Text that JSON.parse refuses. */
const malformedJson = fc.oneof(
  unicodeText.map((s) => `{${s}`),
  fc.json().map((j) => j.slice(0, Math.max(1, j.length - 1)) + (j.length > 1 ? '' : '{')).filter((s) => { try { JSON.parse(s); return false; } catch { return true; } }),
  fc.constantFrom('{"a":}', '{,}', "{'a':1}", '[1,2', 'NaN', '{"a":01}', '\u0000', '{"a":"\\x"}', '\ufeff{}'.slice(1) + '}'),
);
/** Numbers no field takes: huge, negative, non-integer, past double range (as JSON text). */
const badNumber = fc.oneof(
  fc.constantFrom('1e400', '-1e400', '-0', '123456789012345678901234567890', '-9007199254740993', '1.5', '-1', '0'),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
  fc.bigInt().map(String),
);
/** A value of the wrong type for whatever field it lands in. */
const wrongValue = fc.oneof(fc.string({ unit: 'binary', maxLength: 20 }).map((s) => JSON.stringify(s)), badNumber, fc.constantFrom('null', 'true', '[]', '{}', '[[[]]]'));
/** Every field name the routes read, each with a wrong value. */
const FIELDS = ['source', 'source_code', 'name', 'alias', 'request_data', 'model', 'messages', 'stream', 'max_tokens', 'task_id', 'num_devices', 'num_gpus', 'min', 'max', 'target', 'slo_ms', 'task_list', 'task', 'plan', 'app_id', 'invocations', 'tasks', 'kind', 'config', 'text'];
const wrongTypes = fc.dictionary(fc.constantFrom(...FIELDS), wrongValue, { maxKeys: 6 }).map((o) => `{${Object.entries(o).map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(',')}}`);
const deepNesting = fc.tuple(fc.integer({ min: 1_000, max: 200_000 }), fc.constantFrom('[', '{"a":')).map(([n, open]) => `${open.repeat(n)}1${(open === '[' ? ']' : '}').repeat(n)}`);
/** Bodies that no route accepts. */
const badBody = fc.oneof(malformedJson, wrongTypes, deepNesting, badNumber, fc.constantFrom('', '""', '[]', 'null'));

test('malformed JSON, wrong types, bad numbers and deep nesting get a 4xx JSON error on every body route', async (t) => {
  await fc.assert(fc.asyncProperty(route, badBody, (r, body) => expectJsonError(r, body)), { numRuns: RUNS * 3 });
  t.pass();
});

test('a body of another content type gets a 4xx JSON error on every body route', async (t) => {
  const type = fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json; charset=utf-16', 'application/json; charset=klingon', 'image/png');
  await fc.assert(fc.asyncProperty(route, type, fc.oneof(fc.json(), unicodeText), (r, ct, body) => expectJsonError(r, body, ct)), { numRuns: RUNS });
  t.pass();
});

test('unicode and unknown names in path parameters get a 4xx JSON error', async (t) => {
  const name = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).map(encodeURIComponent);
  const paths = fc.oneof(
    name.map((n) => ({ method: 'POST', path: `/app/invoke/${n}` })),
    name.map((n) => ({ method: 'POST', path: `/app/unregister/${n}`, admin: true })),
    name.map((n) => ({ method: 'DELETE', path: `/tasks/register/${n}`, admin: true })),
    name.map((n) => ({ method: 'GET', path: `/v1/models/${n}` })),
  );
  await fc.assert(fc.asyncProperty(paths, (r) => expectJsonError(r, r.method === 'POST' ? JSON.stringify({ request_data: { text: 'x' } }) : undefined)), { numRuns: RUNS });
  t.pass();
});

test('a deadline that is not a time gets a 4xx JSON error on the invoke routes', async (t) => {
  const bad = fc.oneof(badNumber, unicodeText, fc.constantFrom('', 'soon', '1e3', '0x10', 'Infinity'));
  const where = fc.constantFrom('query', 'header');
  const r = fc.constantFrom('/app/invoke/echo', '/tasks/invoke', '/v1/chat/completions');
  await fc.assert(fc.asyncProperty(r, where, bad, async (path, w, value) => {
    const url = new URL(path, p.gatewayUrl);
    if (w === 'query') url.searchParams.set('timeout_ms', value);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (w === 'header') headers['x-cornserve-deadline'] = value.replace(/[^\x20-\x7e]/g, '?');
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ request_data: { text: 'x' } }), signal: AbortSignal.timeout(WAIT_MS) });
    const a = { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
    // A value that happens to be a valid timeout or deadline may be served, or run out (504 DEADLINE_EXCEEDED, e.g.
    // timeout_ms=1); anything else is a 4xx JSON error.
    const ranOut = a.status === 504 && /"code":"DEADLINE_EXCEEDED"/.test(a.text);
    if ((a.status >= 500 && !ranOut) || (a.status >= 300 && !isJsonError(a))) throw new Error(`${path} ${w} ${JSON.stringify(value)} → ${shown(a)}`);
  }), { numRuns: RUNS });
  t.pass();
});

/** Sends raw bytes and returns what came back before the server closed (or '' at WAIT_MS: the test then fails). */
function raw(bytes: string, endEarly: boolean): Promise<string> {
  const { port, hostname } = new URL(p.gatewayUrl);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), hostname);
    let got = '';
    const timer = setTimeout(() => { sock.destroy(); reject(new Error(`no answer and no close within ${WAIT_MS} ms for ${JSON.stringify(bytes.slice(0, 200))}`)); }, WAIT_MS);
    sock.on('data', (d) => { got += d.toString('latin1'); });
    sock.on('error', () => undefined);
    sock.on('close', () => { clearTimeout(timer); resolve(got); });
    sock.write(bytes, 'latin1');
    if (endEarly) sock.end();
  });
}

/** The status and body of a raw HTTP/1.1 answer ('' when the server only closed). */
/** The first response in `text` (a pipelined request's garbage may draw a second answer after it). */
function parseRaw(text: string): Answer | undefined {
  const m = /^HTTP\/1\.1 (\d{3})[^\r]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(text);
  if (!m) return undefined;
  const type = /^content-type:\s*(.*)$/im.exec(m[2]!)?.[1] ?? '';
  const length = /^content-length:\s*(\d+)/im.exec(m[2]!)?.[1];
  const body = length === undefined ? m[3]! : Buffer.from(m[3]!, 'latin1').subarray(0, Number(length)).toString('latin1');
  return { status: Number(m[1]), contentType: type.trim(), text: body };
}

test('a body cut short (the client stops sending and closes) gets a 4xx JSON error or a plain close, and the gateway serves on', async (t) => {
  await fc.assert(fc.asyncProperty(route, fc.json({ maxDepth: 3 }), fc.integer({ min: 1, max: 1000 }), async (r, json, missing) => {
    const body = Buffer.from(json).toString('latin1');
    const cut = body.slice(0, Math.max(0, body.length - 1));
    const head = `${r.method} ${r.path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${body.length + missing}\r\n${r.admin ? `authorization: Bearer ${TEST_ADMIN_TOKEN}\r\n` : ''}connection: close\r\n\r\n`;
    const answer = await raw(head + cut, true);
    const a = parseRaw(answer);
    if (answer !== '' && !(a && isJsonError(a))) throw new Error(`${r.method} ${r.path} cut short → ${JSON.stringify(answer.slice(0, 300))}`);
  }), { numRuns: RUNS });
  t.is((await fetch(new URL('/health', p.gatewayUrl))).status, 200);
});

test('a malformed chunked stream or request line gets a 4xx JSON error', async (t) => {
  const broken = fc.oneof(
    fc.tuple(route, fc.constantFrom('zz\r\n{}\r\n0\r\n\r\n', '5\r\n{"a"\r\n', '-1\r\n\r\n', 'ffffffffffffffffff\r\n{}\r\n', '2\r\n{}XX0\r\n\r\n')).map(([r, chunks]) => `${r.method} ${r.path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n${chunks}`),
    fc.constantFrom('GARBAGE\r\n\r\n', 'POST /app/invoke/echo HTTP/1.1\r\ncontent-length: -5\r\n\r\n', 'POST /app/invoke/echo HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab', 'GET / HTTP/1.1\r\nbad header line\r\n\r\n'),
  );
  await fc.assert(fc.asyncProperty(broken, async (bytes) => {
    const answer = await raw(bytes, false);
    const a = parseRaw(answer);
    if (!(a && isJsonError(a))) throw new Error(`${JSON.stringify(bytes.slice(0, 120))} → ${JSON.stringify(answer.slice(0, 300))}`);
  }), { numRuns: RUNS / 2 });
  t.is((await fetch(new URL('/health', p.gatewayUrl))).status, 200);
});

/** Opens WS /session, sends one frame, returns the first reply frame. */
function firstReply(frame: string | Buffer): Promise<{ status: number; content: string }> {
  const ws = new WebSocket(new URL('/session', p.gatewayUrl.replace(/^http/, 'ws')));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { ws.terminate(); reject(new Error(`no reply within ${WAIT_MS} ms to ${JSON.stringify(String(frame).slice(0, 120))}`)); }, WAIT_MS);
    ws.once('open', () => ws.send(frame, { binary: Buffer.isBuffer(frame) }));
    ws.once('message', (data) => { clearTimeout(timer); ws.close(); resolve(JSON.parse(data.toString()) as { status: number; content: string }); });
    ws.once('error', (e) => { clearTimeout(timer); reject(e); });
  });
}

test('a malformed first frame on WS /session gets a 4xx reply and the socket serves on', async (t) => {
  const verb = fc.oneof(fc.constantFrom('declare_used', 'declare_not_used'), unicodeText);
  const frame = fc.oneof(
    badBody,
    fc.tuple(verb, fc.oneof(wrongValue, deepNesting, fc.json())).map(([v, list]) => `{"verb":${JSON.stringify(v)},"task_list":${list}}`),
    fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
  );
  await fc.assert(fc.asyncProperty(frame, async (f) => {
    const reply = await firstReply(f);
    if (!(reply.status >= 400 && reply.status < 500 && typeof reply.content === 'string')) throw new Error(`${JSON.stringify(String(f).slice(0, 120))} → ${JSON.stringify(reply)}`);
  }), { numRuns: RUNS });
  t.pass();
});

// Regressions: the fuzzer's shrunk failures.

test('a chunk size that is not hex gets 400 BAD_HTTP_REQUEST as JSON, not node\'s bare 400', async (t) => {
  const a = parseRaw(await raw('POST /app/invoke/echo HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', false));
  t.is(a?.status, 400);
  t.is((JSON.parse(a!.text) as { error: { code: string } }).error.code, 'BAD_HTTP_REQUEST');
});

test('a /tasks/invoke body nested 100,000 deep gets 400 BAD_REQUEST, not 500', async (t) => {
  const a = await send({ method: 'POST', path: '/tasks/invoke' }, `${'['.repeat(100_000)}${']'.repeat(100_000)}`);
  t.is(a.status, 400);
  t.is((JSON.parse(a.text) as { error: { code: string } }).error.code, 'BAD_REQUEST');
});
