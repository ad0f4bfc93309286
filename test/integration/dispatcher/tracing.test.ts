/**
 * Trace context through the dispatcher: the CloudEvent's traceparent is continued by `dispatcher.invoke`,
 * and each executor call is a CLIENT span whose context reaches the executor in its traceparent header.
 */
import test from 'ava';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { CloudEvent, HTTP } from 'cloudevents';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { TaskGraph, TASKGRAPH_EVENT_TYPE } from '../../../functions/sdk/index.js';
import { EchoTask } from '../../../functions/tasks/echo.js';
import { startDispatcher } from '../../../control/dispatcher/server.js';
import { MemoryStore } from '../../../control/store/memory.js';
import { SpanKind, startTelemetry, stopTelemetry } from '../../../lib/telemetry.js';
import { deployTask } from '../../helpers/executors.js';

const exporter = new InMemorySpanExporter();
test.before(async () => {
  await startTelemetry('dispatcher-test', [new SimpleSpanProcessor({ exporter })]);
});
test.after.always(async () => {
  await stopTelemetry();
});

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';

test('dispatcher.invoke continues the CloudEvent trace and each executor call carries its CLIENT span as traceparent', async (t) => {
  // An executor that answers like the echo executor and keeps the headers it received.
  const received: IncomingHttpHeaders[] = [];
  const executor = createServer((req, res) => {
    received.push(req.headers);
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ echo: (JSON.parse(body) as { text: string }).text }));
    });
  });
  executor.listen(0, '127.0.0.1');
  await once(executor, 'listening');
  t.teardown(() => void executor.close());

  const invocation = { task: new EchoTask({ serviceTimeMs: 0 }), input: { text: 'traced' }, output: { echo: '' } };
  const store = new MemoryStore();
  await deployTask(store, invocation.task, [{ url: `http://127.0.0.1:${(executor.address() as { port: number }).port}` }]);
  const dispatcher = await startDispatcher({ store });
  t.teardown(() => dispatcher.close(100));

  const msg = HTTP.binary(
    new CloudEvent({
      type: TASKGRAPH_EVENT_TYPE,
      source: '/apps/app-traced',
      datacontenttype: 'application/json',
      data: new TaskGraph([invocation]).toJSON(),
      traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01`,
      deadline: Date.now() + 60_000,
    }),
  );
  const res = await fetch(dispatcher.url, { method: 'POST', headers: msg.headers as Record<string, string>, body: msg.body as string });
  t.deepEqual(await res.json(), [{ echo: 'traced' }]);

  const spans = exporter.getFinishedSpans();
  const invoke = spans.find((s) => s.name === 'dispatcher.invoke');
  const call = spans.find((s) => s.kind === SpanKind.CLIENT);
  t.like(invoke?.spanContext(), { traceId: TRACE_ID });
  t.is(invoke?.parentSpanContext?.spanId, CALLER_SPAN);
  t.is(call?.parentSpanContext?.spanId, invoke?.spanContext().spanId);
  t.is(received[0]?.traceparent, `00-${TRACE_ID}-${call?.spanContext().spanId}-01`);
});
