/** The encoder rows' derivation (sim/fit/vision-tower.ts) on small synthetic tables with known rates. */
import test from 'ava';
import { deriveEncoder, fitRates, gemmFlopsPerToken, parseAttentionCsv, parseMlpCsv, type DeviceRates, type VisionTower } from '../../../sim/fit/vision-tower.js';
import { encoderMs, encoderModelSchema, llmTokensOf } from '../../../sim/latency/models.js';

const GEMM_TFLOPS = 200; // GFLOP per ms
const GEMM_LAUNCH = 0.01;
const ELEM_MS_PER_M = 0.005;
const ELEM_LAUNCH = 0.002;
const ATTN_TFLOPS = 50;
const ATTN_LAUNCH = 0.02;

const OPS = ['attn_pre_proj', 'attn_post_proj', 'mlp_up_proj', 'mlp_down_proj', 'input_layernorm', 'post_attention_layernorm', 'add', 'mlp_act', 'attn_rope', 'emb'];

/** An mlp.csv (upstream column names) whose times follow the known rates exactly. */
function syntheticMlpCsv(shapes: Array<{ hidden: number; ffn: number; heads: number; kv: number }>): string {
  const header = [...OPS.flatMap((op) => ['min', 'max', 'mean', 'median', 'std'].map((s) => `time_stats.${op}.${s}`)), 'n_head', 'n_kv_head', 'n_embd', 'n_expanded_embd', 'vocab_size', 'use_gated_mlp', 'num_tokens', 'num_tensor_parallel_workers'];
  const lines = [header.join(',')];
  for (const s of shapes) for (const tp of [1, 2]) for (const tokens of [1, 128, 512, 1024, 2048, 4096]) {
    const shape = { hidden: s.hidden, ffn: s.ffn, qHeads: s.heads, kvHeads: s.kv, gated: true, tp };
    const hd = s.hidden / s.heads;
    const elems: Record<string, number> = { input_layernorm: s.hidden, post_attention_layernorm: s.hidden, add: s.hidden, mlp_act: s.ffn / tp, attn_rope: ((s.heads + s.kv) * hd) / tp, emb: s.hidden };
    const ms = (op: string) => (op in elems ? ELEM_LAUNCH + (elems[op]! * tokens / 1e6) * ELEM_MS_PER_M : GEMM_LAUNCH + (gemmFlopsPerToken(shape, op as 'attn_pre_proj') * tokens / 1e9) / GEMM_TFLOPS);
    const row = OPS.flatMap((op) => { const m = ms(op); return [m, m, m, m, 0]; });
    lines.push([...row, s.heads, s.kv, s.hidden, s.ffn, 32768, 'True', tokens, tp].join(','));
  }
  return lines.join('\n');
}

function syntheticAttentionCsv(): string {
  const header = 'time_stats.attn_prefill.median,n_embd,n_q_head,n_kv_head,num_tensor_parallel_workers,batch_size,prefill_chunk_size,kv_cache_size,is_prefill';
  const lines = [header];
  for (const L of [64, 512, 1024, 2048, 4096]) lines.push([ATTN_LAUNCH + (2 * L * L * 4096 / 1e9) / ATTN_TFLOPS, 8192, 64, 8, 2, 1, L, 0, 'True'].join(','));
  lines.push([99, 8192, 64, 8, 2, 1, 512, 512, 'True'].join(',')); // a chunk with cached context: not a full prompt
  lines.push(['', 8192, 64, 8, 2, 32, 0, 1024, 'False'].join(',')); // a decode row
  return lines.join('\n');
}

test('the fitted rates recover the GEMM, element-wise and attention rates a table was made with', (t) => {
  const mlp = parseMlpCsv(syntheticMlpCsv([{ hidden: 1024, ffn: 2816, heads: 8, kv: 8 }, { hidden: 2048, ffn: 5632, heads: 16, kv: 4 }]));
  const attention = parseAttentionCsv(syntheticAttentionCsv());
  t.is(attention.length, 5);
  t.is(attention[0]!.qWidthPerGpu, 4096);
  const r = fitRates(mlp, attention);
  t.true(Math.abs(r.gemmTflops / GEMM_TFLOPS - 1) < 1e-6);
  t.true(Math.abs(r.gemmLaunchMs - GEMM_LAUNCH) < 1e-6);
  t.true(Math.abs(r.elementwiseMsPerMElement / ELEM_MS_PER_M - 1) < 1e-6);
  t.true(Math.abs(r.elementwiseLaunchMs - ELEM_LAUNCH) < 1e-6);
  t.true(Math.abs(r.attentionTflops / ATTN_TFLOPS - 1) < 1e-6);
  t.true(Math.abs(r.attentionLaunchMs - ATTN_LAUNCH) < 1e-6);
  // Another device without an attention table: A100's attention rate scaled by the given ratio.
  t.true(Math.abs(fitRates(mlp, attention, 2).attentionTflops / (2 * ATTN_TFLOPS) - 1) < 1e-6);
});

test('a toy tower gets the a + b·patches + c·patches² its kernels add up to', (t) => {
  // 1 layer, hidden 2, MLP 4 (not gated), 1 head, 1-px patches, no merge, full attention: per patch 64 FLOPs of
  // layer GEMMs (qkv 24, out 8, up 16, down 16) + 12 of patch embedding; 12 elements (2 norms + 2 adds of 2, act 4);
  // attention 4·H = 8 FLOPs per patch². Rates of 1 FLOP per ms and 1 ms per element make the sums readable.
  const tower: VisionTower = { name: 'toy', source: 'test', layers: 1, hidden: 2, ffn: 4, heads: 1, gatedMlp: false, rope: false, patchSize: 1, temporalPatch: 1, merge: 1, fullAttentionLayers: 1, windowPatches: 0, outHidden: 2 };
  const rates: DeviceRates = { gemmTflops: 1e-9, gemmLaunchMs: 1, elementwiseMsPerMElement: 1e6, elementwiseLaunchMs: 2, attentionTflops: 1e-9, attentionLaunchMs: 3, samples: { gemm: 0, elementwise: 0, attention: 0 } };
  const e = deriveEncoder(tower, rates, 10);
  t.is(e.gemmFlopsPerPatch, 76);
  t.true(Math.abs(e.a - (5 * 1 + 5 * 2 + 3)) < 1e-9); // 5 GEMMs, 5 element-wise kernels, 1 attention kernel
  t.true(Math.abs(e.b - (76 + 12)) < 1e-9);
  t.true(Math.abs(e.c - 8) < 1e-9);
  t.true(Math.abs(e.exampleMs.total - (18 + 88 * 10 + 8 * 100)) < 1e-6);
  t.true(Math.abs(e.exampleMs.gemm + e.exampleMs.elementwise + e.exampleMs.attention - e.exampleMs.total) < 1e-6);
  t.is(e.llmTokensPerUnit, 1);
});

test('windowed attention is linear in patches and a 2×2 merge quarters the LLM tokens', (t) => {
  const base: VisionTower = { name: 'toy', source: 'test', layers: 2, hidden: 8, ffn: 16, heads: 2, gatedMlp: true, rope: true, patchSize: 14, temporalPatch: 2, merge: 2, fullAttentionLayers: 0, windowPatches: 64, outHidden: 16 };
  const rates: DeviceRates = { gemmTflops: 100, gemmLaunchMs: 0, elementwiseMsPerMElement: 0, elementwiseLaunchMs: 0, attentionTflops: 10, attentionLaunchMs: 0, samples: { gemm: 0, elementwise: 0, attention: 0 } };
  const windowed = deriveEncoder(base, rates);
  t.is(windowed.c, 0);
  const full = deriveEncoder({ ...base, fullAttentionLayers: 2 }, rates);
  t.true(full.c > 0);
  t.is(windowed.llmTokensPerUnit, 0.25);
  t.is(windowed.bytesPerUnit, (16 * 2) / 4);
});

test('the encoder model charges c per item: a batch of two images costs less than one image of both', (t) => {
  const m = encoderModelSchema.parse({ a: 1, b: 0.01, c: 1e-6, llmTokensPerUnit: 0.25 });
  const two = encoderMs(m, 2000, 'e', 1000 ** 2 + 1000 ** 2);
  const one = encoderMs(m, 2000, 'e');
  t.true(Math.abs(one - (1 + 20 + 4)) < 1e-9);
  t.true(Math.abs(two - (1 + 20 + 2)) < 1e-9);
  t.is(llmTokensOf(m, 4784), 1196);
  t.is(llmTokensOf(encoderModelSchema.parse({ a: 0, b: 1 }), 10), 10); // no merge given: one token per unit
});
