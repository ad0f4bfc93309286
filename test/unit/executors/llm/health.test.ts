/** The LLM executor's /health is its engine's health: 503 EXECUTOR_ENGINE_DEAD once the engine cannot serve. */
import test from 'ava';
import { LlmModel } from '../../../../executors/llm/model.js';
import { llm, llmDir, postChat, startLlmServer } from '../../../helpers/llm.js';

const MODEL = 'cornserve/tiny-vlm-b';
const chat = (content: string) => ({ model: MODEL, messages: [{ role: 'user', content }], max_tokens: 4, temperature: 0 });
const health = async (url: string) => {
  const res = await fetch(`${url}/health`);
  return { status: res.status, body: (await res.json()) as { status: string; parts: Record<string, string>; error?: { code: string } } };
};

test('the LLM executor answers 503 EXECUTOR_ENGINE_DEAD once its engine has stopped', async (t) => {
  const srv = await startLlmServer(await llm('tiny-lm-b'));
  t.teardown(() => srv.close());
  t.like(await health(srv.url), { status: 200, body: { status: 'ok', parts: { engine: 'up' } } });
  await srv.server.close(); // the engine only: HTTP still answers
  t.like(await health(srv.url), { status: 503, body: { parts: { engine: 'down' }, error: { code: 'EXECUTOR_ENGINE_DEAD' } } });
});

test('an LLM executor whose model session is broken turns unhealthy once its decoder steps keep failing', async (t) => {
  const model = await LlmModel.load(await llmDir('tiny-lm-b'));
  const srv = await startLlmServer(model, { engine: { brokenAfterFailures: 2 } });
  t.teardown(() => srv.close());
  t.is((await postChat(srv.url, chat('hello'))).status, 200);
  await model.close(); // its ONNX sessions are released: every step fails from now on
  for (const text of ['one', 'two']) t.true((await postChat(srv.url, chat(text))).status >= 500);
  t.like(await health(srv.url), { status: 503, body: { error: { code: 'EXECUTOR_ENGINE_DEAD' } } });
});
