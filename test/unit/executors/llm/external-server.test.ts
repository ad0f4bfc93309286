/** The external-LLM adapter's deadline timer: a deadline past setTimeout's range does not cancel the upstream call at once. */
import test from 'ava';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildExternalServer } from '../../../../executors/llm/external-server.js';
import { DEADLINE_HEADER } from '../../../../lib/deadline.js';
import { logger } from '../../../../lib/log.js';
import { sleep } from '../../../../lib/wait.js';

const servers: Server[] = [];
test.after.always(() => servers.forEach((s) => s.close()));

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test('a request whose deadline is beyond setTimeout range (30 days) gets the upstream\'s answer', async (t) => {
  // An OpenAI-compatible upstream that takes 100 ms to answer.
  const upstream = await listen(createServer((req, res) => {
    req.resume();
    req.on('end', () => void sleep(100).then(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"choices":[{"message":{"content":"late"}}]}')));
  }));
  const adapter = await listen(createServer(buildExternalServer({ upstream, log: logger('test').child({}, { level: 'silent' }) })));
  const res = await fetch(`${adapter}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [DEADLINE_HEADER]: String(Date.now() + 30 * 24 * 3600_000) },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
  });
  t.is(res.status, 200);
  t.deepEqual(await res.json(), { choices: [{ message: { content: 'late' } }] });
});
