/** The task manager's health probe checks who answers: a process that took an executor's port is not that executor. */
import test from 'ava';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { probeExecutor, waitHealthy } from '../../../../control/taskmanager/health.js';
import { healthReport } from '../../../../executors/common/health.js';
import { TimeoutError } from '../../../../lib/wait.js';

async function answering(body: unknown): Promise<{ url: string; server: Server }> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

test('an executor\'s health answer names the executor id the platform gave it', (t) => {
  const before = process.env.CORNSERVE_EXECUTOR_ID;
  process.env.CORNSERVE_EXECUTOR_ID = 'echo-0ms-3';
  t.teardown(() => (before === undefined ? delete process.env.CORNSERVE_EXECUTOR_ID : (process.env.CORNSERVE_EXECUTOR_ID = before)));
  t.like(healthReport([]), { status: 200, body: { status: 'ok', executor: 'echo-0ms-3' } });
});

test('a 200 from the expected executor is ok', async (t) => {
  const { url, server } = await answering({ status: 'ok', executor: 'geri-audio-2' });
  t.teardown(() => server.close());
  t.deepEqual(await probeExecutor(url, '/health', 1_000, 'geri-audio-2'), { kind: 'ok' });
});

test('a 200 from another executor on the port is failed, naming both', async (t) => {
  const { url, server } = await answering({ status: 'ok', executor: 'llm-tiny-vlm-a-1' });
  t.teardown(() => server.close());
  const r = await probeExecutor(url, '/health', 1_000, 'geri-audio-2');
  t.is(r.kind, 'failed');
  t.regex((r as { reason: string }).reason, /answered by executor llm-tiny-vlm-a-1, not geri-audio-2: another process holds its port/);
});

test('waiting for an executor whose port another executor answers times out instead of taking it as ready', async (t) => {
  const { url, server } = await answering({ status: 'ok', executor: 'llm-tiny-vlm-a-1' });
  t.teardown(() => server.close());
  await t.throwsAsync(waitHealthy(url, '/health', { timeoutMs: 300, intervalMs: 50, executorId: 'geri-audio-2' }), { instanceOf: TimeoutError });
});

test('an answer naming no executor (started by hand, an external server) is taken as it is', async (t) => {
  const { url, server } = await answering({ status: 'ok' });
  t.teardown(() => server.close());
  t.deepEqual(await probeExecutor(url, '/health', 1_000, 'geri-audio-2'), { kind: 'ok' });
});
