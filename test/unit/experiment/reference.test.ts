/** The reference's workloads with memory on: the accountings and the memory each system leaves the LLM. */
import test from 'ava';
import { REFERENCE_WORKLOADS, referenceTable, runReference } from '../../../experiment/reference.js';

test('InternVL3-38B on A40: the encoder inside shrinks the LLM’s KV cache, which the monolithic LLMs fill first', async (t) => {
  const r = await runReference(REFERENCE_WORKLOADS.find((w) => w.name === 'internvl3-38b/a40')!, true);
  const { monolithic, split, monolithic_llm_devices_only: llmOnly } = r.systems;
  t.true(monolithic.kv_tokens < split.kv_tokens, `${monolithic.kv_tokens} vs ${split.kv_tokens}`);
  t.true(monolithic.kv_peak_use > split.kv_peak_use, `${monolithic.kv_peak_use} vs ${split.kv_peak_use}`);
  t.is(llmOnly.devices, 6, 'encoders not charged: the monolithic system gets the split’s 3 LLMs × TP 2');
  t.is(r.equal_devices.goodput, split.goodput_rps / monolithic.goodput_rps);
  t.is(r.encoders_not_charged.goodput, split.goodput_rps / llmOnly.goodput_rps);
  t.regex(referenceTable([r]), /equal devices .* encoder devices not charged/);
});
