/**
 * Optimum's decoder layouts, built as Optimum builds them (builders/hf-decoder.ts, tiny-qwen2's weights):
 * `decoder_model_merged.onnx` (one If over the bool `use_cache_branch`; the no-cache branch ignores the past) and
 * the older `decoder_model.onnx` + `decoder_with_past_model.onnx` pair. References: transformers.js generating over
 * the merged file (it feeds use_cache_branch itself), and the plain full-recompute onnxruntime loop.
 */
import { join } from 'node:path';
import test from 'ava';
import OpenAI from 'openai';
import ort from 'onnxruntime-node';
import { AutoModelForCausalLM, AutoTokenizer, env } from '@huggingface/transformers';
import { generate } from '../../../../executors/llm/direct.js';
import { buildPrompt, renderChat } from '../../../../executors/llm/prompt.js';
import { referenceDecoder } from '../../../helpers/hf-reference.js';
import { llm, llmDir, startLlmServer } from '../../../helpers/llm.js';

env.allowRemoteModels = false;

interface TjsTensor { dims: number[]; data: ArrayLike<number | bigint> }
interface TjsTokenizer { apply_chat_template(messages: unknown[], o: { add_generation_prompt: boolean; return_dict: boolean }): { input_ids: TjsTensor } }

const MESSAGES = [{ role: 'user' as const, content: 'Hello there, the cat' }];

/** One run of the merged graph over `ids` after a past of `past` ids (empty past: use_cache_branch as given). */
async function mergedLogits(session: ort.InferenceSession, ids: number[], pastIds: number[], useCache: boolean): Promise<Float32Array> {
  const feeds = (tokens: number[], offset: number, past: Record<string, ort.Tensor> | undefined, flag: boolean) => {
    const total = offset + tokens.length;
    const f: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(total).fill(1n), [1, total]),
      position_ids: new ort.Tensor('int64', BigInt64Array.from(tokens, (_, i) => BigInt(offset + i)), [1, tokens.length]),
      use_cache_branch: new ort.Tensor('bool', Uint8Array.of(flag ? 1 : 0), [1]),
    };
    for (let l = 0; l < 2; l++) {
      for (const w of ['key', 'value']) f[`past_key_values.${l}.${w}`] = past?.[`present.${l}.${w}`] ?? new ort.Tensor('float32', new Float32Array(0), [1, 2, 0, 16]);
    }
    return f;
  };
  const prompt = await session.run(feeds(pastIds, 0, undefined, false));
  const out = await session.run(feeds(ids, pastIds.length, prompt as Record<string, ort.Tensor>, useCache));
  return out.logits!.data as Float32Array;
}

test('the merged fixture is Optimum\'s If: with a past, use_cache_branch false takes the no-cache branch and gives other logits', async (t) => {
  const session = await ort.InferenceSession.create(join(await llmDir('tiny-qwen2-merged'), 'onnx', 'decoder_model_merged.onnx'));
  t.teardown(() => session.release());
  const withCache = await mergedLogits(session, [7], [40, 41, 42], true);
  const noCache = await mergedLogits(session, [7], [40, 41, 42], false);
  const reference = await referenceDecoder(await llmDir('tiny-qwen2'));
  t.teardown(() => reference.close());
  const full = await reference.lastLogits([40, 41, 42, 7]);
  const maxDiff = (a: Float32Array, b: Float32Array) => Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i]!)));
  t.true(maxDiff(withCache, full) < 1e-4);
  t.true(maxDiff(noCache, full) > 0.1);
});

test('an Optimum merged export generates the tokens transformers.js generates over the same file (do_sample false)', async (t) => {
  const dir = await llmDir('tiny-qwen2-merged');
  const m = await llm('tiny-qwen2-merged');
  t.is(m.layout, 'merged');
  const tok = (await AutoTokenizer.from_pretrained(dir)) as unknown as TjsTokenizer;
  const lm = await AutoModelForCausalLM.from_pretrained(dir, { dtype: 'fp32', model_file_name: 'decoder_model_merged' });
  t.teardown(() => lm.dispose());
  const inputs = tok.apply_chat_template(MESSAGES, { add_generation_prompt: true, return_dict: true });
  const out = (await lm.generate({ ...inputs, max_new_tokens: 24, do_sample: false } as never)) as unknown as TjsTensor;
  const expected = Array.from(out.data, Number).slice(inputs.input_ids.dims[1]);
  const ours = await generate(m, buildPrompt(m, renderChat(m.tokenizer, MESSAGES)), { maxTokens: 24, temperature: 0 });
  t.deepEqual(ours.tokens, expected);
});

test('an Optimum merged export serves a chat through the openai client with transformers.js\'s tokens, one-shot and streamed', async (t) => {
  const dir = await llmDir('tiny-qwen2-merged');
  const m = await llm('tiny-qwen2-merged');
  const tok = (await AutoTokenizer.from_pretrained(dir)) as unknown as TjsTokenizer;
  const lm = await AutoModelForCausalLM.from_pretrained(dir, { dtype: 'fp32', model_file_name: 'decoder_model_merged' });
  const s = await startLlmServer(m);
  t.teardown(async () => { await s.close(); await lm.dispose(); });
  const inputs = tok.apply_chat_template(MESSAGES, { add_generation_prompt: true, return_dict: true });
  const out = (await lm.generate({ ...inputs, max_new_tokens: 16, do_sample: false } as never)) as unknown as TjsTensor;
  const expected = m.tokenizer.decode(Array.from(out.data, Number).slice(inputs.input_ids.dims[1]));
  const client = new OpenAI({ baseURL: `${s.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  const c = await client.chat.completions.create({ model: 'tiny-qwen2-merged', messages: MESSAGES, max_tokens: 16, temperature: 0 });
  t.is(c.choices[0]!.message.content, expected);
  let streamed = '';
  for await (const chunk of await client.chat.completions.create({ model: 'tiny-qwen2-merged', messages: MESSAGES, max_tokens: 16, temperature: 0, stream: true })) {
    streamed += chunk.choices[0]?.delta.content ?? '';
  }
  t.is(streamed, expected);
});

test('an Optimum decoder_model + decoder_with_past_model pair generates the full-recompute reference tokens', async (t) => {
  const m = await llm('tiny-qwen2-pair');
  t.is(m.layout, 'pair');
  const reference = await referenceDecoder(await llmDir('tiny-qwen2'));
  t.teardown(() => reference.close());
  const prompt = buildPrompt(m, renderChat(m.tokenizer, MESSAGES));
  const expected = await reference.greedy(prompt.ids!, 24, new Set());
  const ours = await generate(m, prompt, { maxTokens: 24, temperature: 0, ignoreEos: true });
  t.deepEqual(ours.tokens, expected);
});
