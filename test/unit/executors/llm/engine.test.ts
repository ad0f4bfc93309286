import test from 'ava';
import { generate } from '../../../../executors/llm/direct.js';
import { Engine } from '../../../../executors/llm/engine.js';
import { llm, userPrompt } from '../../../helpers/llm.js';
import { waitUntil } from '../../../../lib/wait.js';

const greedy = (maxTokens: number) => ({ maxTokens, temperature: 0, ignoreEos: true });

test('short requests joining a long-running sequence leave its output unchanged', async (t) => {
  const m = await llm('tiny-lm-b');
  const engine = new Engine(m);
  t.teardown(() => engine.close());
  const long = userPrompt(m, 'a long prompt '.repeat(45)); // ~640 tokens: a large cache capacity
  let tokens = 0;
  let joined: Promise<unknown> | undefined;
  const longRun = engine.submit({
    prompt: long, gen: greedy(40), deadline: Date.now() + 60_000,
    onToken: () => {
      if (++tokens === 10) joined = Promise.all(['hi', 'yo'].map((s) => engine.submit({ prompt: userPrompt(m, s), gen: greedy(5), deadline: Date.now() + 60_000 })));
    },
  });
  const r = await longRun;
  await joined;
  t.deepEqual(r.tokens, (await generate(m, long, greedy(40))).tokens);
});

test('the engine frees every cache slot once idle', async (t) => {
  const m = await llm('tiny-lm-b');
  const engine = new Engine(m);
  t.teardown(() => engine.close());
  await Promise.all(['a', 'bb', 'ccc'].map((s) => engine.submit({ prompt: userPrompt(m, s), gen: greedy(4), deadline: Date.now() + 60_000 })));
  const s = await waitUntil('the cache is released', () => (engine.stats().kvBytes === 0 ? engine.stats() : undefined));
  t.deepEqual([s.running, s.waiting, s.kvSlots], [0, 0, 0]);
});

test('a request for hidden states returns [prompt tokens, hidden] and takes no slot', async (t) => {
  const m = await llm('tiny-lm-b');
  const engine = new Engine(m);
  t.teardown(() => engine.close());
  const p = userPrompt(m, 'hidden');
  const r = await engine.submit({ prompt: p, gen: greedy(1), hiddenStates: true, deadline: Date.now() + 60_000 });
  t.is(r.hidden!.length, p.n * m.config.hidden);
  t.deepEqual(r.tokens, []);
});

test('closing the engine fails the requests still waiting or running', async (t) => {
  const m = await llm('tiny-lm-b');
  const engine = new Engine(m);
  const pending = engine.submit({ prompt: userPrompt(m, 'x'), gen: greedy(1500), deadline: Date.now() + 60_000 });
  await engine.close();
  const e = await t.throwsAsync(pending);
  t.is((e as { code?: string }).code, 'LLM_CANCELLED');
});
