/** `up` on a gateway port already in use fails before it starts anything: no sidecar, no executor, no store. */
import test from 'ava';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { startCornserve } from '../../../control/compose/up.js';

test('up on a busy port fails with EADDRINUSE and starts no child process', async (t) => {
  const holder = createServer();
  holder.listen(0, '127.0.0.1');
  await once(holder, 'listening');
  t.teardown(() => holder.close());
  const port = (holder.address() as { port: number }).port;
  const started: string[] = [];
  const err = await t.throwsAsync(startCornserve({ port, devices: 1, sidecars: true, autoscale: false, logSink: (prefix) => void started.push(prefix) }));
  t.is((err as Error & { code?: string }).code, 'EADDRINUSE');
  t.deepEqual([...new Set(started)], []);
});
