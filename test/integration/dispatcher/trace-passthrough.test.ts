/**
 * Trace context with spans off (no exporter in this process): the dispatcher records nothing but passes the
 * CloudEvent's traceparent on to every executor unchanged, as W3C trace context asks of a non-tracing hop.
 */
import test from 'ava';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { TaskGraph } from '../../../functions/sdk/index.js';
import { EchoTask } from '../../../functions/tasks/echo.js';
import { taskGraphEvent } from '../../../functions/runtime/cloudevent-dispatcher.js';
import { startDispatcher } from '../../../control/dispatcher/server.js';
import { MemoryStore } from '../../../control/store/memory.js';
import { startTelemetry, stopTelemetry, tracingOn } from '../../../lib/telemetry.js';
import { deployTask } from '../../helpers/executors.js';

test.after.always(() => stopTelemetry());

test('with spans off the dispatcher passes the caller\'s traceparent to each executor unchanged', async (t) => {
  await startTelemetry('dispatcher-no-exporter'); // what every process does; no endpoint, no processors: spans off
  t.false(tracingOn());
  const received: IncomingHttpHeaders[] = [];
  const executor = createServer((req, res) => {
    received.push(req.headers);
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: (JSON.parse(body) as { text: string }).text })));
  });
  executor.listen(0, '127.0.0.1');
  await once(executor, 'listening');
  t.teardown(() => void executor.close());

  const a = { task: new EchoTask({ serviceTimeMs: 0 }), input: { text: 'a' }, output: { echo: '' } };
  const b = { task: new EchoTask({ serviceTimeMs: 1 }), input: { text: 'b' }, output: { echo: '' } };
  const store = new MemoryStore();
  const url = `http://127.0.0.1:${(executor.address() as { port: number }).port}`;
  await deployTask(store, a.task, [{ url }]);
  await deployTask(store, b.task, [{ url }]);
  const dispatcher = await startDispatcher({ store });
  t.teardown(() => dispatcher.close(100));

  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const { headers, body } = taskGraphEvent(new TaskGraph([a, b]).toJSON(), 'app-untraced', Date.now() + 60_000, traceparent);
  const res = await fetch(dispatcher.url, { method: 'POST', headers, body });
  t.deepEqual(await res.json(), [{ echo: 'a' }, { echo: 'b' }]);
  t.deepEqual(received.map((h) => h.traceparent), [traceparent, traceparent]);
});
