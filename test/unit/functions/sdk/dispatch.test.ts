import test from 'ava';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { once } from 'node:events';
import { DEADLINE_HEADER, DispatchError, GatewayDispatcher, readDispatchResponse, runInRequestScope, type DispatchResult } from '../../../../functions/sdk/index.js';
import { EchoStreamTask } from '../../../../functions/tasks/index.js';

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const ndjson = (...pieces: string[]) =>
  new Response(
    new ReadableStream({
      start(c) {
        for (const p of pieces) c.enqueue(new TextEncoder().encode(p));
        c.close();
      },
    }),
    { headers: { 'content-type': 'application/x-ndjson' } },
  );

async function streamLines(r: DispatchResult): Promise<string[]> {
  const out: string[] = [];
  for await (const l of r.stream ?? []) out.push(l);
  return out;
}

test('a JSON reply is the outputs array', async (t) => {
  t.deepEqual(await readDispatchResponse(json([{ a: 1 }, {}])), { outputs: [{ a: 1 }, {}] });
});

test('an NDJSON reply: first line is the outputs, the remaining lines are the stream', async (t) => {
  const r = await readDispatchResponse(ndjson('[{"a":1},{}]\n{"n"', ':1}\n{"n":2}\n'));
  t.deepEqual([r.outputs, await streamLines(r)], [[{ a: 1 }, {}], ['{"n":1}', '{"n":2}']]);
});

test('an error reply becomes a DispatchError with the dispatcher code, message and status', async (t) => {
  const err = await t.throwsAsync(readDispatchResponse(json({ error: { code: 'TASK_NOT_DEPLOYED', message: 'echo is not deployed' } }, 404)), {
    instanceOf: DispatchError,
  });
  t.deepEqual([err!.code, err!.status, err!.message], ['TASK_NOT_DEPLOYED', 404, 'echo is not deployed']);
});

test('an error reply that is not JSON keeps the status and the start of the body', async (t) => {
  await t.throwsAsync(readDispatchResponse(new Response('upstream broke', { status: 503 })), {
    instanceOf: DispatchError,
    message: /HTTP 503: upstream broke/,
  });
});

test('a JSON reply that is not an array is a DispatchError', async (t) => {
  await t.throwsAsync(readDispatchResponse(json({ outputs: [] })), { instanceOf: DispatchError, message: /not a JSON array/ });
});

test('an NDJSON reply whose first line is not an array is a DispatchError', async (t) => {
  await t.throwsAsync(readDispatchResponse(ndjson('{"a":1}\n')), { instanceOf: DispatchError, message: /first line .* is not an array/ });
});

test('an empty NDJSON reply is a DispatchError', async (t) => {
  await t.throwsAsync(readDispatchResponse(ndjson()), { instanceOf: DispatchError, message: /ended before its outputs line/ });
});

// ---------- GatewayDispatcher against a real HTTP server ----------

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

/** A gateway stand-in: answers POST /tasks/invoke with a streaming reply of `chunks`, recording the request. */
async function gateway(chunks: unknown[]): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const c of req) raw += c;
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: JSON.parse(raw) });
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.end([JSON.stringify([{}]), ...chunks.map((c) => JSON.stringify(c))].join('\n') + '\n');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, seen, server };
}

test('GatewayDispatcher posts the graph to /tasks/invoke with the deadline and trace context, and streams the reply', async (t) => {
  const gw = await gateway([{ echo: 'a', index: 0 }]);
  t.teardown(() => {
    gw.server.closeAllConnections();
    gw.server.close();
  });
  const deadline = Date.now() + 60_000;
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const task = new EchoStreamTask({});
  const stream = await runInRequestScope({ traceparent }, () => task.call({ text: 'a', chunks: 1 }, { dispatcher: new GatewayDispatcher(gw.url), deadline }));
  const chunks: unknown[] = [];
  for await (const c of stream) chunks.push(c);
  const req = gw.seen[0]!;
  t.deepEqual(
    [req.method, req.url, req.headers[DEADLINE_HEADER], req.headers.traceparent, (req.body as { invocations: unknown[] }).invocations.length, chunks],
    ['POST', '/tasks/invoke', String(deadline), traceparent, 1, [{ echo: 'a', index: 0 }]],
  );
});

test('GatewayDispatcher waits for the reply of a call whose deadline lies past setTimeout\'s range (30 days away)', async (t) => {
  const gw = await gateway([{ echo: 'far', index: 0 }]);
  t.teardown(() => {
    gw.server.closeAllConnections();
    gw.server.close();
  });
  const stream = await new EchoStreamTask({}).call({ text: 'far', chunks: 1 }, { dispatcher: new GatewayDispatcher(gw.url), deadline: Date.now() + 30 * 24 * 3600_000 });
  const chunks: unknown[] = [];
  for await (const c of stream) chunks.push(c);
  t.deepEqual(chunks, [{ echo: 'far', index: 0 }]);
});

test('a final error line ends a streaming dispatch reply with a DispatchError carrying its code', async (t) => {
  const body = ['[{}]', '{"x":1}', '{"error":{"code":"TASK_FAILED","message":"llm broke mid-stream"}}', ''].join('\n');
  const res = new Response(body, { headers: { 'content-type': 'application/x-ndjson' } });
  const { stream } = await readDispatchResponse(res);
  const seen: string[] = [];
  const err = await t.throwsAsync(async () => {
    for await (const line of stream!) seen.push(line);
  });
  t.deepEqual(seen, ['{"x":1}']);
  t.is((err as DispatchError).code, 'TASK_FAILED');
  t.is(err!.message, 'llm broke mid-stream');
});
