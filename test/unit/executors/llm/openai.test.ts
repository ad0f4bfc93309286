import test from 'ava';
import { ChunkWriter, hiddenStatesForward } from '../../../../executors/llm/openai.js';
import { executorRequestSchema } from '../../../../executors/llm/openai.js';

test('a content chunk is the JSON of the full chunk object, whatever the text', (t) => {
  const w = new ChunkWriter('chatcmpl-x', 'm/x', true);
  for (const text of ['plain', 'quote " backslash \\ newline \n', '\u0000 nul', '✓ 多', '\uFFFD']) {
    t.deepEqual(JSON.parse(w.content(text)), {
      id: 'chatcmpl-x', object: 'chat.completion.chunk', created: w.created, model: 'm/x',
      choices: [{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }], usage: null,
    });
  }
});

test('hidden-state forward ranks are read from a JSON string as the reference sends them', (t) => {
  const req = executorRequestSchema.parse({
    model: 'm', messages: [{ role: 'user', content: 'x' }],
    vllm_xargs: { cornserve_hidden_states_forward_id: 'abc123', cornserve_hidden_states_forward_ranks: '[[2, 3]]' },
  });
  t.deepEqual(hiddenStatesForward(req), { id: 'abc123', dstGroups: [[2, 3]], generated: false });
});

test('the generated flag (true or "true") asks for the generated tokens\' states; anything else is a bad request', (t) => {
  const xargs = (generated: unknown) => executorRequestSchema.parse({
    model: 'm', messages: [{ role: 'user', content: 'x' }],
    vllm_xargs: { cornserve_hidden_states_forward_id: 'abc', cornserve_hidden_states_forward_ranks: [[1]], cornserve_hidden_states_forward_generated: generated },
  });
  t.true(hiddenStatesForward(xargs(true))!.generated);
  t.true(hiddenStatesForward(xargs('true'))!.generated);
  t.false(hiddenStatesForward(xargs(false))!.generated);
  t.throws(() => hiddenStatesForward(xargs('yes')), { message: /cornserve_hidden_states_forward_generated must be true or false/ });
});

test('malformed hidden-state forward ranks are a bad request naming the field', (t) => {
  const req = executorRequestSchema.parse({
    model: 'm', messages: [{ role: 'user', content: 'x' }],
    vllm_xargs: { cornserve_hidden_states_forward_id: 'abc', cornserve_hidden_states_forward_ranks: 'two' },
  });
  const e = t.throws(() => hiddenStatesForward(req));
  t.is((e as { param?: string }).param, 'vllm_xargs.cornserve_hidden_states_forward_ranks');
});
