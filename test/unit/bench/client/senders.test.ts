import test from 'ava';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chatTarget, invokeTarget } from '../../../../bench/client/senders.js';
import { freePort } from '../../../../lib/net.js';
import { startFakeOpenAI } from '../../../helpers/fake-openai.js';

const body = { model: 'fake/model', messages: [{ role: 'user', content: 'hi' }], stream: true, max_tokens: 5 };

test('the chat sender counts tokens and inter-token gaps from the SSE stream', async (t) => {
  const fake = await startFakeOpenAI({ words: ['a', 'b', 'c', 'd', 'e'] });
  t.teardown(() => fake.close());
  const m = await chatTarget(fake.url).send(body);
  t.true(m.ok);
  t.is(m.status, 200);
  t.is(m.outputTokens, 5);
  t.is(m.itlMs.length, 4);
  t.true(m.ttftMs! >= 0 && m.ttftMs! <= m.e2elMs!);
  t.is(fake.requests[0]!.body.stream, true);
});

test('an HTTP error is a failed request with its status and the server error code', async (t) => {
  const fake = await startFakeOpenAI({ apiKey: 'secret' });
  t.teardown(() => fake.close());
  const m = await chatTarget(fake.url).send(body);
  t.false(m.ok);
  t.is(m.status, 401);
  t.is(m.errorCode, 'invalid_api_key');
});

test('no server is a failed request with status 0 and the connection error code', async (t) => {
  const m = await chatTarget(`http://127.0.0.1:${await freePort()}`).send(body);
  t.false(m.ok);
  t.is(m.status, 0);
  t.is(m.errorCode, 'ECONNREFUSED');
});

/** A gateway stand-in for /app/invoke/APP: NDJSON lines a few ms apart, optionally ending in an error line. */
async function ndjsonServer(lines: unknown[]): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    let i = 0;
    const next = () => {
      if (i === lines.length) return void res.end();
      res.write(`${JSON.stringify(lines[i++])}\n`);
      setTimeout(next, 5);
    };
    next();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

test('the invoke sender counts one output per NDJSON line, the first line being the first token', async (t) => {
  const s = await ndjsonServer([{ echo: 'a', index: 0 }, { echo: 'a', index: 1 }, { echo: 'a', index: 2 }]);
  t.teardown(() => s.close());
  const m = await invokeTarget(s.url, 'echo').send({ text: 'a', chunks: 3 });
  t.true(m.ok);
  t.is(m.outputTokens, 3);
  t.is(m.itlMs.length, 2);
  t.true(m.ttftMs! < m.e2elMs!);
});

test('an error line inside an NDJSON stream makes the request fail with its code', async (t) => {
  const s = await ndjsonServer([{ echo: 'a', index: 0 }, { error: { code: 'TASK_FAILED', message: 'executor crashed' } }]);
  t.teardown(() => s.close());
  const m = await invokeTarget(s.url, 'echo').send({ text: 'a', chunks: 3 });
  t.false(m.ok);
  t.is(m.errorCode, 'TASK_FAILED');
  t.is(m.outputTokens, 1);
});
