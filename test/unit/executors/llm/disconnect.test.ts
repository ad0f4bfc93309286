import test from 'ava';
import { llm, startLlmServer, streamChat } from '../../../helpers/llm.js';
import { waitUntil } from '../../../../lib/wait.js';

test('a client disconnecting mid-stream frees its batch slot', async (t) => {
  const srv = await startLlmServer(await llm('tiny-lm-b'));
  t.teardown(() => srv.close());
  const body = { model: 'cornserve/tiny-vlm-b', messages: [{ role: 'user', content: 'go on' }], max_tokens: 1500, temperature: 0, ignore_eos: true };
  const s = await streamChat(srv.url, body, { stopAfter: 3 });
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
