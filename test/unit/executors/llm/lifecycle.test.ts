/** Requests that end early: the client goes away, the deadline passes, the queue is full. Each test has its own server. */
import test from 'ava';
import { llm, postChat, startLlmServer, streamChat } from '../../../helpers/llm.js';
import { waitUntil } from '../../../../lib/wait.js';

const MODEL = 'cornserve/tiny-vlm-b';
const long = (content: string) => ({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: 1500, temperature: 0, ignore_eos: true });

test('a client disconnecting mid-stream frees its batch slot', async (t) => {
  const srv = await startLlmServer(await llm('tiny-lm-b'));
  t.teardown(() => srv.close());
  const s = await streamChat(srv.url, long('go on'), { stopAfter: 3 });
  t.false(s.done);
  const info = await waitUntil('the slot is freed', async () => {
    const i = await srv.info();
    return i.running === 0 && i.waiting === 0 ? i : undefined;
  });
  t.is(info.running, 0);
  const metrics = await srv.metrics();
  t.regex(metrics, /cornserve_llm_running_requests 0/);
  t.regex(metrics, /cornserve_llm_requests_total\{outcome="cancelled"\} 1/);
});

test('a stream whose deadline passes ends with an OpenAI error event and [DONE]', async (t) => {
  const srv = await startLlmServer(await llm('tiny-lm-b'));
  t.teardown(() => srv.close());
  const s = await streamChat(srv.url, long('too slow'), { headers: { 'x-cornserve-deadline': String(Date.now() + 300) } });
  t.true(s.done);
  t.is(s.chunks.at(-1)!.error.code, 'LLM_DEADLINE_EXCEEDED');
  t.is((await srv.info()).running, 0);
});

test('a non-streamed request whose deadline passes is a 504', async (t) => {
  const srv = await startLlmServer(await llm('tiny-lm-b'));
  t.teardown(() => srv.close());
  const r = await postChat(srv.url, long('too slow'), { 'x-cornserve-deadline': String(Date.now() + 300) });
  t.is(r.status, 504);
  t.is(r.body.error.code, 'LLM_DEADLINE_EXCEEDED');
});

test('a request beyond the waiting queue is refused with 503 and the queued one still completes', async (t) => {
  const srv = await startLlmServer(await llm('tiny-lm-b'), { engine: { maxBatch: 1, maxWaiting: 1 } });
  t.teardown(() => srv.close());
  const ac = new AbortController();
  const first = fetch(`${srv.url}/v1/chat/completions`, { method: 'POST', signal: ac.signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...long('first'), stream: true }) });
  await waitUntil('the first request runs', async () => ((await srv.info()).running === 1 ? true : undefined));
  const queued = postChat(srv.url, { model: MODEL, messages: [{ role: 'user', content: 'second' }], max_tokens: 3 });
  await waitUntil('the second request waits', async () => ((await srv.info()).waiting === 1 ? true : undefined));
  const refused = await postChat(srv.url, { model: MODEL, messages: [{ role: 'user', content: 'third' }], max_tokens: 3 });
  t.is(refused.status, 503);
  t.is(refused.body.error.code, 'LLM_OVERLOADED');
  ac.abort();
  await first.catch(() => undefined);
  t.is((await queued).status, 200);
});
