import test from 'ava';
import { buildPrompt, renderChat } from '../../../../executors/llm/prompt.js';
import { generate } from '../../../../executors/llm/direct.js';
import type { Tokenizer } from '../../../../executors/llm/tokenizer.js';
import { llm, userPrompt } from '../../../helpers/llm.js';

test('the chat template wraps each message in its role marker and ends with the generation prompt', async (t) => {
  const m = await llm('tiny-lm-b');
  const tok = m.tokenizer as Tokenizer; // the built-in byte-level tokenizer
  const p = buildPrompt(m, renderChat(tok, [{ role: 'system', content: 'S' }, { role: 'user', content: 'U' }]));
  const sp = (n: string) => tok.special(n);
  t.deepEqual(p.ids, [tok.bos, sp('<|system|>'), 83, sp('<|end|>'), sp('<|user|>'), 85, sp('<|end|>'), sp('<|assistant|>')]);
});

test('an image part takes as many placeholder tokens as its embedding has rows', async (t) => {
  const m = await llm('tiny-lm-b');
  const rows = 7;
  const p = userPrompt(m, [{ type: 'text', text: 'see' }, { type: 'image_url', image_url: { url: 'data:image/uuid;data_id=ab;url=x,' } }],
    [{ rows, data: new Float32Array(rows * m.config.hidden) }]);
  const img = (m.tokenizer as Tokenizer).special('<|image|>');
  t.is(p.ids.filter((id) => id === img).length, rows);
  t.deepEqual(p.media, [{ modality: 'image', part: 0, start: 5, rows }]);
});

test('embedding rows replace the placeholder embeddings and nothing else', async (t) => {
  const m = await llm('tiny-lm-b');
  const h = m.config.hidden;
  const rows = 3;
  const data = Float32Array.from({ length: rows * h }, (_, i) => i / 100);
  const parts = [{ type: 'audio_url' as const, audio_url: { url: 'u' } }, { type: 'text' as const, text: 'after' }];
  const p = userPrompt(m, parts, [{ rows, data }]);
  const start = p.media[0]!.start;
  t.deepEqual(p.embeds.subarray(start * h, (start + rows) * h), data);
  const next = p.ids[start + rows]!;
  t.deepEqual(p.embeds.subarray((start + rows) * h, (start + rows + 1) * h), m.embeddingTable.subarray(next * h, (next + 1) * h));
});

test('different image embeddings give different outputs', async (t) => {
  const m = await llm('tiny-lm-b');
  const h = m.config.hidden;
  const part = [{ type: 'image_url' as const, image_url: { url: 'u' } }];
  const a = userPrompt(m, part, [{ rows: 4, data: Float32Array.from({ length: 4 * h }, (_, i) => Math.sin(i)) }]);
  const b = userPrompt(m, part, [{ rows: 4, data: Float32Array.from({ length: 4 * h }, (_, i) => Math.cos(i)) }]);
  const ga = await generate(m, a, { maxTokens: 16, temperature: 0 });
  const gb = await generate(m, b, { maxTokens: 16, temperature: 0 });
  t.notDeepEqual(ga.tokens, gb.tokens);
});

test('a multimodal part without an embedding is a bad request', async (t) => {
  const m = await llm('tiny-lm-b');
  const e = t.throws(() => userPrompt(m, [{ type: 'image_url', image_url: { url: 'u' } }]));
  t.is((e as { code?: string }).code, 'LLM_BAD_REQUEST');
});
