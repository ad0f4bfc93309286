import test from 'ava';
import { chatTarget } from '../../../../bench/client/senders.js';
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
