import test from 'ava';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { HTTP, type CloudEvent } from 'cloudevents';
import { DEADLINE_HEADER, DispatchError, type TaskGraphJSON, TASKGRAPH_EVENT_TYPE } from '../../../../functions/sdk/index.js';
import { CloudEventDispatcher } from '../../../../functions/runtime/cloudevent-dispatcher.js';

// A receiver that records each CloudEvent it gets and answers with the graph's own inputs as outputs
// (so the reply depends on what was sent), or as an NDJSON stream when the graph streams.
const received: Array<{ event: CloudEvent<unknown>; headers: Record<string, unknown> }> = [];
let server: Server;
let url: string;

test.before(async () => {
  const app = express();
  app.use(express.text({ type: '*/*' }));
  app.post('/', (req, res) => {
    const event = HTTP.toEvent({ headers: req.headers, body: req.body as string }) as CloudEvent<unknown>;
    received.push({ event, headers: req.headers });
    const graph = event.data as TaskGraphJSON;
    const input = graph.invocations[0]!.input as { fail?: boolean; hang?: boolean };
    if (input.fail) return void res.status(504).json({ error: { code: 'DEADLINE_EXCEEDED', message: 'too slow' } });
    if (input.hang) return; // never answers: only the caller's deadline or signal ends the call
    const outputs = graph.invocations.map((i) => i.input);
    if (!graph.is_streaming) return void res.json(outputs);
    res.setHeader('content-type', 'application/x-ndjson');
    res.end(`${JSON.stringify(outputs)}\n{"n":1}\n{"n":2}\n`);
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
test.after.always(() => server.close());

const graph = (input: unknown, isStreaming = false): TaskGraphJSON => ({
  invocations: [{ task_class: 'EchoTask', task: { id: 'a1', descriptor: null, config: { serviceTimeMs: 0 } }, input, output: { echo: '' } }],
  is_streaming: isStreaming,
});

const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

test.serial('one call sends one binary-mode CloudEvent with type, source, deadline and traceparent', async (t) => {
  received.length = 0;
  const d = new CloudEventDispatcher(url);
  const deadline = Date.now() + 10_000;
  await d.dispatch(graph({ text: 'x' }), { deadline, traceparent: TP, appId: 'app-123' });
  d.close();
  t.is(received.length, 1);
  const { event, headers } = received[0]!;
  t.is(event.type, TASKGRAPH_EVENT_TYPE);
  t.is(event.source, '/apps/app-123');
  t.is(Number(event.deadline), deadline);
  t.is(event.traceparent, TP);
  t.deepEqual(event.data, graph({ text: 'x' }));
  t.is(headers['ce-specversion'], '1.0'); // binary mode: attributes travel as ce-* headers
  t.is(headers[DEADLINE_HEADER], String(deadline));
});

test.serial('the reply outputs are returned in order', async (t) => {
  const d = new CloudEventDispatcher(url);
  const result = await d.dispatch(graph({ text: 'back' }), { deadline: Date.now() + 10_000 });
  d.close();
  t.deepEqual(result.outputs, [{ text: 'back' }]);
  t.is(result.stream, undefined);
});

test.serial('a streaming reply gives the outputs line and then the stream lines', async (t) => {
  const d = new CloudEventDispatcher(url);
  const result = await d.dispatch(graph({ text: 's' }, true), { deadline: Date.now() + 10_000 });
  const lines: string[] = [];
  for await (const l of result.stream!) lines.push(l);
  d.close();
  t.deepEqual(result.outputs, [{ text: 's' }]);
  t.deepEqual(lines, ['{"n":1}', '{"n":2}']);
});

test.serial('an error reply becomes a DispatchError with its status and code', async (t) => {
  const d = new CloudEventDispatcher(url);
  const err = await t.throwsAsync(d.dispatch(graph({ fail: true }), { deadline: Date.now() + 10_000 }), { instanceOf: DispatchError });
  d.close();
  t.is(err!.status, 504);
  t.is(err!.code, 'DEADLINE_EXCEEDED');
});

test.serial('an unreachable dispatcher is a 503 DISPATCHER_UNAVAILABLE', async (t) => {
  const d = new CloudEventDispatcher('http://127.0.0.1:1/');
  const err = await t.throwsAsync(d.dispatch(graph({ text: 'x' }), { deadline: Date.now() + 10_000 }), { instanceOf: DispatchError });
  t.is(err!.code, 'DISPATCHER_UNAVAILABLE');
  t.is(err!.status, 503);
});

test.serial('a call still unanswered at its deadline fails with DEADLINE_EXCEEDED', async (t) => {
  const d = new CloudEventDispatcher(url);
  const err = await t.throwsAsync(d.dispatch(graph({ hang: true }), { deadline: Date.now() + 200 }), { instanceOf: DispatchError });
  d.close();
  t.is(err!.code, 'DEADLINE_EXCEEDED');
  t.is(err!.status, 504);
});

test.serial('a deadline past setTimeout\'s range (30 days away) waits for the reply instead of failing at once', async (t) => {
  const d = new CloudEventDispatcher(url);
  const result = await d.dispatch(graph({ text: 'far' }), { deadline: Date.now() + 30 * 24 * 3600_000 });
  d.close();
  t.deepEqual(result.outputs, [{ text: 'far' }]);
});

test.serial('aborting the signal cancels the call', async (t) => {
  const d = new CloudEventDispatcher(url);
  const abort = new AbortController();
  setTimeout(() => abort.abort(), 100);
  const err = await t.throwsAsync(d.dispatch(graph({ hang: true }), { deadline: Date.now() + 10_000, signal: abort.signal }), { instanceOf: DispatchError });
  d.close();
  t.is(err!.code, 'CANCELLED');
});

test.serial('keep-alive: consecutive calls reuse one connection', async (t) => {
  const d = new CloudEventDispatcher(url);
  const ports = new Set<number>();
  server.on('connection', (s) => ports.add(s.remotePort!));
  for (let i = 0; i < 5; i++) await d.dispatch(graph({ text: String(i) }), { deadline: Date.now() + 10_000 });
  d.close();
  t.is(ports.size, 1);
});
