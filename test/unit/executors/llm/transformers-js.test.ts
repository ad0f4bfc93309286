/**
 * Cross-checks against transformers.js (@huggingface/transformers, offline: env.allowRemoteModels = false) loading
 * the same local folders:
 *  - tiny-qwen2: served greedy tokens = `AutoModelForCausalLM.generate({do_sample: false})`; the chat template as
 *    `tokenizer.apply_chat_template` renders it;
 *  - tiny-qwen2-vl: the Qwen2-VL template with image parts, and the Qwen2-VL patches (pixel_values, grid_thw) of
 *    `Qwen2VLImageProcessor`. Its generation is not compared: transformers.js feeds Qwen2-VL decoders M-RoPE
 *    position_ids [3, batch, seq], and tiny-qwen2-vl's decoder takes 1-D positions (docs/models.md).
 */
import test from 'ava';
import { AutoModelForCausalLM, AutoProcessor, AutoTokenizer, RawImage, env } from '@huggingface/transformers';
import type { ChatMessage } from '../../../../lib/openai.js';
import { generate } from '../../../../executors/llm/direct.js';
import type { HfTokenizer } from '../../../../executors/llm/hf-tokenizer.js';
import { encoderManifest } from '../../../../executors/models/hf-encoder.js';
import { decodeRgb, preprocessImage } from '../../../../executors/models/preprocess/image.js';
import { maxAbsDiff } from '../../../helpers/eric.js';
import { buildPrompt, renderChat } from '../../../../executors/llm/prompt.js';
import { llm, llmDir, postChat, startLlmServer } from '../../../helpers/llm.js';
import { makeImage } from '../../../helpers/media.js';

env.allowRemoteModels = false;

/** transformers.js's types are loose under NodeNext (its .d.ts re-exports through extensionless paths): the few calls used here, typed. */
interface TjsTensor { dims: number[]; data: ArrayLike<number | bigint> }
interface TjsTokenizer {
  apply_chat_template(messages: unknown[], o: { add_generation_prompt: boolean; tokenize?: boolean; return_dict?: boolean }): unknown;
}
const ids = (t: TjsTensor) => Array.from(t.data, Number);

const CHATS: ChatMessage[][] = [
  [{ role: 'user', content: 'Hello there, the cat' }],
  [{ role: 'user', content: 'What is 2+2?' }],
  [{ role: 'system', content: 'Be terse.' }, { role: 'user', content: 'A' }, { role: 'assistant', content: 'B' }, { role: 'user', content: 'ünïcödé ✓ and 多模态' }],
];

test('tiny-qwen2: served greedy tokens equal transformers.js AutoModelForCausalLM.generate (do_sample false) on the same folder', async (t) => {
  const dir = await llmDir('tiny-qwen2');
  const m = await llm('tiny-qwen2');
  const tok = (await AutoTokenizer.from_pretrained(dir)) as unknown as TjsTokenizer;
  const lm = await AutoModelForCausalLM.from_pretrained(dir, { dtype: 'fp32' });
  const s = await startLlmServer(m);
  t.teardown(async () => { await s.close(); await lm.dispose(); });
  for (const messages of CHATS) {
    const inputs = tok.apply_chat_template(messages, { add_generation_prompt: true, return_dict: true }) as { input_ids: TjsTensor };
    const out = (await lm.generate({ ...inputs, max_new_tokens: 16, do_sample: false } as never)) as unknown as TjsTensor;
    const expected = ids(out).slice(inputs.input_ids.dims[1]);
    const direct = await generate(m, buildPrompt(m, renderChat(m.tokenizer, messages)), { maxTokens: 16, temperature: 0 });
    t.deepEqual(direct.tokens, expected, JSON.stringify(messages));
    const res = await postChat(s.url, { model: 'tiny-qwen2', messages, max_tokens: 16, temperature: 0 });
    t.is(res.status, 200);
    t.is(res.body.choices[0].message.content, m.tokenizer.decode(expected));
    t.is(res.body.usage.completion_tokens, expected.length);
  }
});

test('tiny-qwen2: the chat template renders, and the chat encodes, as transformers.js apply_chat_template', async (t) => {
  const dir = await llmDir('tiny-qwen2');
  const ours = (await llm('tiny-qwen2')).tokenizer as HfTokenizer;
  const theirs = (await AutoTokenizer.from_pretrained(dir)) as unknown as TjsTokenizer;
  for (const messages of CHATS) {
    for (const add of [true, false]) {
      t.is(ours.renderText(messages, add), theirs.apply_chat_template(messages, { add_generation_prompt: add, tokenize: false }) as string);
    }
    const { input_ids } = theirs.apply_chat_template(messages, { add_generation_prompt: true, return_dict: true }) as { input_ids: TjsTensor };
    t.deepEqual(ours.encode(ours.renderText(messages)), ids(input_ids));
  }
});

test('tiny-qwen2-vl: the Qwen2-VL template with image parts renders as transformers.js apply_chat_template', async (t) => {
  const dir = await llmDir('tiny-qwen2-vl');
  const ours = (await llm('tiny-qwen2-vl')).tokenizer as HfTokenizer;
  const theirs = (await AutoTokenizer.from_pretrained(dir)) as unknown as TjsTokenizer;
  const image = { type: 'image_url' as const, image_url: { url: 'data:,x' } };
  const chats: ChatMessage[][] = [
    [{ role: 'user', content: [{ type: 'text', text: 'What is' }, image, { type: 'text', text: ' this?' }] }],
    [{ role: 'system', content: 'Look closely.' }, { role: 'user', content: [image, image, { type: 'text', text: 'Compare them' }] }],
  ];
  for (const messages of chats) {
    // transformers' own form of an image part: {type: 'image'}.
    const hf = messages.map((m) => ({ ...m, content: typeof m.content === 'string' ? m.content : m.content.map((p) => (p.type === 'text' ? p : { type: 'image' })) }));
    t.is(ours.renderText(messages), theirs.apply_chat_template(hf, { add_generation_prompt: true, tokenize: false }) as string);
  }
});

test('tiny-qwen2-vl: our Qwen2-VL patches equal transformers.js Qwen2VLImageProcessor pixel_values and image_grid_thw (image at a multiple of 28, no resize)', async (t) => {
  const dir = await llmDir('tiny-qwen2-vl');
  const proc = (await AutoProcessor.from_pretrained(dir)) as unknown as { image_processor: (img: RawImage) => Promise<{ pixel_values: TjsTensor; image_grid_thw: TjsTensor }> };
  const pre = (await encoderManifest(dir, ['tiny-qwen2-vl'])).preprocessing.image!;
  for (const [w, h] of [[84, 56], [112, 168]] as const) {
    const png = await makeImage(w, h, { seed: w + h });
    const ours = await preprocessImage(png, pre);
    const rgb = await decodeRgb(png);
    const theirs = await proc.image_processor(new RawImage(rgb.data, rgb.width, rgb.height, 3));
    t.deepEqual(ids(theirs.image_grid_thw), [ours.grid.t, ours.grid.h, ours.grid.w]);
    t.deepEqual(theirs.pixel_values.dims, [ours.grid.t * ours.grid.h * ours.grid.w, ours.patchDim]);
    t.true(maxAbsDiff(ours.patches, theirs.pixel_values.data as Float32Array) <= 1e-5, `${w}x${h}`);
  }
});
