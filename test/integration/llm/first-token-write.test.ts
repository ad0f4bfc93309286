/**
 * A streamed answer's first token costs the client one read: the executor process sends the response headers,
 * the role chunk and the first token's chunk in one write, after the prefill (a long prompt makes the prefill
 * long enough that anything written before it would arrive alone).
 */
import http from 'node:http';
import test from 'ava';
import { llmDescriptor } from '../../../control/descriptors/llm.js';
import { LLMTask } from '../../../functions/tasks/llm.js';
import { launchExecutor } from '../../helpers/llm.js';
import { modelsDir } from '../../helpers/models.js';

/** The body of each `data` event the client sees, in order. */
function reads(url: string, body: unknown): Promise<string[]> {
  const u = new URL('/v1/chat/completions', url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: string[] = [];
      res.setEncoding('utf8');
      res.on('data', (s: string) => chunks.push(s));
      res.on('end', () => resolve(chunks));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

test('the role chunk and the first token reach the client in the same read', async (t) => {
  const task = new LLMTask({ modelId: 'cornserve/tiny-vlm-b', receiveEmbeddings: false });
  const exec = await launchExecutor(llmDescriptor.launch(task), { CORNSERVE_MODELS_DIR: await modelsDir() });
  t.teardown(() => exec.stop());
  const first = (await reads(exec.url, {
    model: 'cornserve/tiny-vlm-b', stream: true, max_tokens: 4, temperature: 0, ignore_eos: true,
    messages: [{ role: 'user', content: 'a long prompt to prefill '.repeat(60) }],
  }))[0]!;
  const events = first.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => JSON.parse(e.slice(6)) as { choices: { delta: { role?: string; content?: string } }[] });
  t.is(events[0]?.choices[0]?.delta.role, 'assistant');
  t.truthy(events[1]?.choices[0]?.delta.content, `the first read held ${events.length} event(s): ${first.slice(0, 300)}`);
});
