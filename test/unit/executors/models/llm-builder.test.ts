import test from 'ava';
import ort from 'onnxruntime-node';
import { LLM_SPECS, VOCAB_SIZE, buildLlm } from '../../../../executors/models/builders/llm.js';
import { loadManifest } from '../../../../executors/models/loader.js';
import { llmDir } from '../../../helpers/llm.js';

test('the tiny LLMs are llm-family folders serving their model ids with the projectors\' hidden sizes', async (t) => {
  const a = await loadManifest(await llmDir('tiny-lm-a'));
  const b = await loadManifest(await llmDir('tiny-lm-b'));
  t.is(a.family, 'llm');
  t.is(a.model_ids['cornserve/tiny-vlm-a']?.hidden_size, 256);
  t.is(b.model_ids['cornserve/tiny-vlm-b']?.hidden_size, 192);
  t.is(a.config.vocab_size, VOCAB_SIZE);
  t.is(a.config.kv_layout, 'append');
});

test('building twice gives byte-identical graphs and tokenizer', (t) => {
  const x = buildLlm(LLM_SPECS['tiny-lm-b']!);
  const y = buildLlm(LLM_SPECS['tiny-lm-b']!);
  for (const [name, bytes] of x.files) t.deepEqual(Buffer.from(bytes), Buffer.from(y.files.get(name)!), name);
});

test('the decoder returns logits, hidden states and the new positions\' keys and values', async (t) => {
  const dir = await llmDir('tiny-lm-b');
  const s = await ort.InferenceSession.create(`${dir}/decoder.onnx`, { intraOpNumThreads: 1 });
  const spec = LLM_SPECS['tiny-lm-b']!;
  const [batch, seq, past, hd] = [2, 3, 16, spec.hidden / spec.heads];
  const feeds: Record<string, ort.Tensor> = {
    inputs_embeds: new ort.Tensor('float32', new Float32Array(batch * seq * spec.hidden).fill(0.1), [batch, seq, spec.hidden]),
    position_ids: new ort.Tensor('int64', BigInt64Array.from([0n, 1n, 2n, 0n, 1n, 2n]), [batch, seq]),
    attention_mask: new ort.Tensor('int64', new BigInt64Array(batch * (past + seq)).fill(1n), [batch, past + seq]),
  };
  for (let l = 0; l < spec.layers; l++) {
    for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', new Float32Array(batch * spec.heads * past * hd), [batch, spec.heads, past, hd]);
  }
  const out = await s.run(feeds);
  await s.release();
  t.deepEqual(out.logits!.dims, [batch, seq, VOCAB_SIZE]);
  t.deepEqual(out.hidden_states!.dims, [batch, seq, spec.hidden]);
  t.deepEqual(out['present.1.key']!.dims, [batch, spec.heads, seq, hd]);
  t.true((out.logits!.data as Float32Array).every(Number.isFinite));
});
