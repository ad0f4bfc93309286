/**
 * callExecutor against a real node:http server in this process: the buffered JSON reply, a streamed reply read
 * slower than it is written (back-pressure pauses the connection, nothing is lost), a reply with no body, an abort
 * while a reply streams, an executor's own error, and which failures to connect mark the request not delivered.
 */
import test from 'ava';
import { once } from 'node:events';
import { createServer, type RequestListener } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { callExecutor } from '../../../../control/dispatcher/executor-client.js';
import { TaskFailedError } from '../../../../lib/dispatch-errors.js';

async function executor(t: { teardown(f: () => void): void }, listener: RequestListener): Promise<string> {
  const server = createServer(listener);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

function call(url: string, signal = new AbortController().signal) {
  return callExecutor({
    site: { invocation: 0, task: 'echo', taskId: 'echo-1', executorId: 'e-1', url },
    request: { path: '/echo', body: { text: 'x' } },
    deadline: Date.now() + 60_000,
    headers: {},
    signal,
  });
}

test('a JSON reply with a length comes back whole, with its status and headers', async (t) => {
  const url = await executor(t, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'x-seen': req.headers['x-cornserve-deadline'] as string }).end(body));
  });
  const res = await call(url);
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { text: 'x' });
  t.truthy(res.headers.get('x-seen'));
});

test('a streamed reply read slower than it is written arrives whole and in order', async (t) => {
  const lines = 2_000;
  const url = await executor(t, async (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    for (let i = 0; i < lines; i++) if (!res.write(`${JSON.stringify({ i, pad: 'y'.repeat(500) })}\n`)) await once(res, 'drain');
    res.end();
  });
  const res = await call(url);
  const reader = res.body!.getReader();
  let text = '';
  for (let n = 0; ; n++) {
    const { done, value } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString('utf8');
    if (n % 50 === 0) await sleep(5); // a slow reader: the executor's writes wait on the paused connection
  }
  const got = text.trim().split('\n').map((l) => (JSON.parse(l) as { i: number }).i);
  t.deepEqual(got, Array.from({ length: lines }, (_, i) => i));
});

test('a 204 reply has no body', async (t) => {
  const url = await executor(t, (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  const res = await call(url);
  t.is(res.status, 204);
  t.is(res.body, null);
});

test('an abort while a reply streams ends its body with the abort reason and closes the executor\'s side', async (t) => {
  let closed!: () => void;
  const executorSawClose = new Promise<void>((r) => (closed = r));
  const url = await executor(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write('{"i":0}\n');
    res.on('close', closed); // the rest never comes
  });
  const controller = new AbortController();
  const res = await call(url, controller.signal);
  const reader = res.body!.getReader();
  t.is(Buffer.from((await reader.read()).value!).toString('utf8'), '{"i":0}\n');
  const reason = new Error('the graph was cut');
  controller.abort(reason);
  await t.throwsAsync(reader.read(), { is: reason });
  await executorSawClose;
});

test('an executor\'s own error keeps its code and message', async (t) => {
  const url = await executor(t, (req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(422, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'model_input_corrupt', message: 'image cannot be decoded' } })));
  });
  const err = await t.throwsAsync(call(url), { instanceOf: TaskFailedError });
  t.is(err!.code, 'model_input_corrupt');
  t.regex(err!.message, /image cannot be decoded/);
});

test('a refused connection is a TASK_FAILED marked not delivered (the request never left)', async (t) => {
  const closed = createServer();
  closed.listen(0, '127.0.0.1');
  await once(closed, 'listening');
  const deadUrl = `http://127.0.0.1:${(closed.address() as { port: number }).port}`;
  closed.close();
  await once(closed, 'close');
  const err = await t.throwsAsync(call(deadUrl));
  t.true(err instanceof TaskFailedError && err.notDelivered, err?.message);
  t.regex(err!.message, /could not be reached: .*ECONNREFUSED/);
});

test('a connection dropped after the request was read is not marked undelivered (the executor may have run it)', async (t) => {
  const url = await executor(t, (req) => {
    req.resume();
    req.on('end', () => req.socket.destroy());
  });
  const err = await t.throwsAsync(call(url));
  t.true(err instanceof TaskFailedError);
  t.false((err as TaskFailedError).notDelivered);
  t.regex(err!.message, /connection broke before it answered/);
});
