/**
 * `cornserve simulate fit-encoder`: the encoder rows of sim/presets/gpus.yaml derived from published GPU profiles
 * instead of guessed. A vision encoder is a transformer over patches, so its time is that of its GEMMs, its
 * element-wise kernels and its attention; Vidur's per-operator tables (microsoft/vidur's profiling data, read from the
 * folder given on the command line, never copied) time exactly those kernels for LLM layers of known shapes:
 *  - GEMMs (`attn_pre_proj`, `attn_post_proj`, `mlp_up_proj`, `mlp_down_proj` of mlp.csv, every TP shard shape of
 *    Llama-2-7B and CodeLlama-34B, batches ≥ MIN_TOKENS): ms = a + FLOPs ÷ R — R is the achieved matmul rate;
 *  - element-wise kernels (norms, residual add, activation, rotary; TP1 rows): ms = a + b·(tokens × width);
 *  - attention (the legacy A100 FlashAttention table, full prompts, kv_cache_size 0): ms = a + causal FLOPs ÷ R_attn.
 * Applied to a named tower's dimensions (its layers, hidden and MLP sizes, heads, which layers attend over the whole
 * image and which over windows, its patch merger), an image of P patches costs a + b·P + c·P² (c: the full-attention
 * layers), which is the simulator's encoder model (sim/latency/models.ts). Only H100 and A40 lack an attention table:
 * their attention rate is A100's scaled by their GEMM rate ÷ A100's (an assumption, printed with the result).
 */
import { gunzipSync } from 'node:zlib';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fitLinear } from '../latency/fit.js';

/** Batches below this are launch-bound; an encoder's batch is an image or more (hundreds to thousands of patches). */
export const MIN_TOKENS = 256;

const GEMM_OPS = ['attn_pre_proj', 'attn_post_proj', 'mlp_up_proj', 'mlp_down_proj'] as const;
type GemmOp = (typeof GEMM_OPS)[number];
const ELEMENTWISE_OPS = ['input_layernorm', 'post_attention_layernorm', 'add', 'mlp_act', 'attn_rope'] as const;
type ElementwiseOp = (typeof ELEMENTWISE_OPS)[number];

/** One mlp.csv row: the layer's shape, the batch and each op's median (ms). */
export interface MlpRow {
  hidden: number;
  ffn: number;
  qHeads: number;
  kvHeads: number;
  gated: boolean;
  tokens: number;
  tp: number;
  medianMs: Record<string, number>;
}

/** One attention-table row of a full prompt (no cached context): its length and the kernel's median (ms). */
export interface AttentionRow { tokens: number; qWidthPerGpu: number; medianMs: number }

function csvRecords(text: string): Array<Record<string, string>> {
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const header = lines[0]!.split(',');
  return lines.slice(1).map((l) => {
    const cells = l.split(',');
    return Object.fromEntries(header.map((h, i) => [h, cells[i] ?? '']));
  });
}

/** Vidur's mlp.csv (columns as upstream names them; README §4.1 of the profiles folder). */
export function parseMlpCsv(text: string): MlpRow[] {
  return csvRecords(text).map((r) => ({
    hidden: Number(r.n_embd),
    ffn: Number(r.n_expanded_embd),
    qHeads: Number(r.n_head),
    kvHeads: Number(r.n_kv_head),
    gated: r.use_gated_mlp === 'True',
    tokens: Number(r.num_tokens),
    tp: Number(r.num_tensor_parallel_workers),
    medianMs: Object.fromEntries([...GEMM_OPS, ...ELEMENTWISE_OPS].map((op) => [op, Number(r[`time_stats.${op}.median`])])),
  }));
}

/** The legacy attention table's prefill rows of full prompts (README §4.2). */
export function parseAttentionCsv(text: string): AttentionRow[] {
  return csvRecords(text)
    .filter((r) => r.is_prefill === 'True' && Number(r.kv_cache_size) === 0)
    .map((r) => ({
      tokens: Number(r.prefill_chunk_size),
      qWidthPerGpu: (Number(r.n_embd) / Number(r.n_q_head)) * (Number(r.n_q_head) / Number(r.num_tensor_parallel_workers)),
      medianMs: Number(r['time_stats.attn_prefill.median']),
    }));
}

/** FLOPs of one GEMM op of a row's layer shard, per token (2 × in × out). */
export function gemmFlopsPerToken(r: Pick<MlpRow, 'hidden' | 'ffn' | 'qHeads' | 'kvHeads' | 'gated' | 'tp'>, op: GemmOp): number {
  const headDim = r.hidden / r.qHeads;
  switch (op) {
    case 'attn_pre_proj': return (2 * r.hidden * (r.qHeads + 2 * r.kvHeads) * headDim) / r.tp;
    case 'attn_post_proj': return (2 * r.qHeads * headDim * r.hidden) / r.tp;
    case 'mlp_up_proj': return (2 * r.hidden * r.ffn * (r.gated ? 2 : 1)) / r.tp;
    case 'mlp_down_proj': return (2 * r.ffn * r.hidden) / r.tp;
  }
}

/** Elements one element-wise op touches per token (its output width). */
function elementsPerToken(r: MlpRow, op: ElementwiseOp): number {
  const headDim = r.hidden / r.qHeads;
  if (op === 'mlp_act') return r.ffn / r.tp;
  if (op === 'attn_rope') return ((r.qHeads + r.kvHeads) * headDim) / r.tp;
  return r.hidden; // norms and the residual add run on the whole hidden state on every shard
}

export interface DeviceRates {
  /** Achieved matmul rate (TFLOP/s) and the per-GEMM constant (ms). */
  gemmTflops: number;
  gemmLaunchMs: number;
  /** Element-wise kernels: ms per million elements, and the per-kernel constant (ms). */
  elementwiseMsPerMElement: number;
  elementwiseLaunchMs: number;
  /** Attention: achieved rate (TFLOP/s, counting the FLOPs the kernel must do) and constant (ms). */
  attentionTflops: number;
  attentionLaunchMs: number;
  /** Samples behind each fit. */
  samples: { gemm: number; elementwise: number; attention: number };
}

/** Straight-line fit y = a + b·x; refitted through the origin when the free constant comes out negative. */
function line(xs: number[], ys: number[]): { a: number; b: number } {
  const [a, b] = fitLinear(xs.map((x) => [x]), ys);
  if (a! >= 0) return { a: a!, b: b! };
  const [, b0] = fitLinear(xs.map((x) => [x]), ys, { intercept: false });
  return { a: 0, b: b0! };
}

/**
 * The device's rates from its mlp.csv rows (any models, all TP shards) and an attention table (A100's; for other
 * devices pass A100's table with `attentionScale` = this device's GEMM rate ÷ A100's).
 */
export function fitRates(mlp: readonly MlpRow[], attention: readonly AttentionRow[], attentionScale = 1): DeviceRates {
  const big = mlp.filter((r) => r.tokens >= MIN_TOKENS);
  const gx: number[] = [];
  const gy: number[] = [];
  for (const r of big) for (const op of GEMM_OPS) {
    const ms = r.medianMs[op]!;
    if (!Number.isFinite(ms) || ms <= 0) continue;
    gx.push((gemmFlopsPerToken(r, op) * r.tokens) / 1e9); // GFLOP
    gy.push(ms);
  }
  const gemm = line(gx, gy);
  const ex: number[] = [];
  const ey: number[] = [];
  for (const r of big.filter((x) => x.tp === 1)) for (const op of ELEMENTWISE_OPS) {
    const ms = r.medianMs[op]!;
    if (!Number.isFinite(ms) || ms <= 0) continue;
    ex.push((elementsPerToken(r, op) * r.tokens) / 1e6);
    ey.push(ms);
  }
  const elem = line(ex, ey);
  // Causal attention over L tokens: QKᵀ and AV each 2·L²·width FLOPs, half of them masked away.
  const ax = attention.map((r) => (2 * r.tokens * r.tokens * r.qWidthPerGpu) / 1e9);
  const att = line(ax, attention.map((r) => r.medianMs));
  if (!(gemm.b > 0) || !(elem.b > 0) || !(att.b > 0)) throw new RangeError('fit-encoder: a fitted rate is not positive (are these the profile tables the README names?)');
  return {
    gemmTflops: 1 / gemm.b, // GFLOP per ms = TFLOP/s
    gemmLaunchMs: gemm.a,
    elementwiseMsPerMElement: elem.b,
    elementwiseLaunchMs: elem.a,
    attentionTflops: attentionScale / att.b,
    attentionLaunchMs: att.a,
    samples: { gemm: gx.length, elementwise: ex.length, attention: ax.length },
  };
}

/** A vision tower's dimensions (what the derivation needs of it). */
export interface VisionTower {
  name: string;
  source: string;
  layers: number;
  hidden: number;
  ffn: number;
  heads: number;
  gatedMlp: boolean;
  /** Rotary position embedding on q and k. */
  rope: boolean;
  patchSize: number;
  /** Frames per patch (Qwen2.5-VL: 2, an image is repeated) — the patch embedding's input is 3 × this × p². */
  temporalPatch: number;
  /** Spatial merge: merge × merge patches become one LLM token (1 = none). */
  merge: number;
  /** Layers attending over the whole image; the others attend within windows of `windowPatches` patches. */
  fullAttentionLayers: number;
  windowPatches: number;
  /** The LLM's hidden size the merger projects to (bytes sent on: 2 per element, bf16). */
  outHidden: number;
}

/**
 * Qwen2.5-VL-7B-Instruct's vision tower (HF config.json vision_config: depth 32, hidden_size 1280, intermediate_size
 * 3420, num_heads 16, patch_size 14, temporal_patch_size 2, spatial_merge_size 2, window_size 112 px = 8 × 8 patches,
 * fullatt_block_indexes [7, 15, 23, 31], out_hidden_size 3584; SwiGLU MLP, RMSNorm, 2-D rotary).
 */
export const QWEN25_VL_7B_VISION: VisionTower = {
  name: 'Qwen2.5-VL-7B vision tower',
  source: 'Qwen/Qwen2.5-VL-7B-Instruct config.json vision_config',
  layers: 32, hidden: 1280, ffn: 3420, heads: 16, gatedMlp: true, rope: true,
  patchSize: 14, temporalPatch: 2, merge: 2, fullAttentionLayers: 4, windowPatches: 64, outHidden: 3584,
};

export interface EncoderDerivation {
  /** The simulator's encoder model: a + b·patches + c·Σ(patches of one image)². */
  a: number;
  b: number;
  c: number;
  /** Per-patch FLOPs and where the time goes for one image of `examplePatches` patches (ms). */
  gemmFlopsPerPatch: number;
  examplePatches: number;
  exampleMs: { gemm: number; elementwise: number; attention: number; total: number };
  /** LLM tokens per patch (1 ÷ merge²) and bytes of embeddings per patch sent on (bf16). */
  llmTokensPerUnit: number;
  bytesPerUnit: number;
}

/** The encoder model of `tower` on a device with `rates`. */
export function deriveEncoder(tower: VisionTower, rates: DeviceRates, examplePatches = 4784): EncoderDerivation {
  const { hidden: H, ffn: F, layers: L, merge: m } = tower;
  const headDim = H / tower.heads;
  // Per patch: a layer's four GEMMs (qkv, out, gate+up, down), the patch embedding, and the merger's two GEMMs (m²H → m²H → outHidden, on patches ÷ m²).
  const perLayer = 2 * H * 3 * H + 2 * H * H + 2 * H * F * (tower.gatedMlp ? 2 : 1) + 2 * F * H;
  const embed = 2 * 3 * tower.temporalPatch * tower.patchSize ** 2 * H;
  const merger = m > 1 ? (2 * (m * m * H) * (m * m * H) + 2 * (m * m * H) * tower.outHidden) / (m * m) : 0;
  const gemmFlopsPerPatch = L * perLayer + embed + merger;
  const gemmKernels = 4 * L + 1 + (m > 1 ? 2 : 0);
  // Element-wise per patch per layer: two norms, two residual adds, the activation (F wide), rotary on q and k.
  const elements = L * (4 * H + F + (tower.rope ? 2 * tower.heads * headDim : 0)) + (m > 1 ? H : 0);
  const elementKernels = L * (5 + (tower.rope ? 1 : 0)) + (m > 1 ? 1 : 0);
  // Attention (not causal: QKᵀ and AV, 4·n·context·H FLOPs): windowed layers over `windowPatches`, full ones over the image.
  const windowed = tower.layers - tower.fullAttentionLayers;
  const attnPerPatch = windowed * 4 * tower.windowPatches * H;
  const attnPerPatch2 = tower.fullAttentionLayers * 4 * H;
  const msPerGflop = 1 / rates.gemmTflops; // TFLOP/s = GFLOP/ms
  const attnMsPerGflop = 1 / rates.attentionTflops;
  const a = gemmKernels * rates.gemmLaunchMs + elementKernels * rates.elementwiseLaunchMs + L * rates.attentionLaunchMs;
  const b = (gemmFlopsPerPatch / 1e9) * msPerGflop + (elements / 1e6) * rates.elementwiseMsPerMElement + (attnPerPatch / 1e9) * attnMsPerGflop;
  const c = (attnPerPatch2 / 1e9) * attnMsPerGflop;
  const P = examplePatches;
  const gemm = gemmKernels * rates.gemmLaunchMs + (P * gemmFlopsPerPatch / 1e9) * msPerGflop;
  const elementwise = elementKernels * rates.elementwiseLaunchMs + (P * elements / 1e6) * rates.elementwiseMsPerMElement;
  const attention = L * rates.attentionLaunchMs + ((P * attnPerPatch + P * P * attnPerPatch2) / 1e9) * attnMsPerGflop;
  return {
    a, b, c, gemmFlopsPerPatch, examplePatches: P,
    exampleMs: { gemm, elementwise, attention, total: a + b * P + c * P * P },
    llmTokensPerUnit: 1 / (m * m),
    bytesPerUnit: (tower.outHidden * 2) / (m * m),
  };
}

/** The profile tables of a device kind, relative to the profiles folder (the layout of its README §1). */
export const DEVICE_TABLES: Record<string, { dir: string; preset: string }> = {
  a100: { dir: 'a100', preset: 'a100-80g' },
  h100: { dir: 'h100', preset: 'h100-80g' },
  a40: { dir: 'a40', preset: 'a40-48g' },
};
const MLP_MODELS = ['meta-llama/Llama-2-7b-hf', 'codellama/CodeLlama-34b-Instruct-hf'];
const ATTENTION_TABLE = 'vidur/legacy/e2d00e9/a100/attention.csv.gz';

export interface DeviceFit { device: string; preset: string; rates: DeviceRates; attentionScale: number; encoder: EncoderDerivation; tables: string[] }

/** Reads the profiles folder and derives every device's encoder row for `tower`. */
export async function fitEncoderPresets(profilesDir: string, tower: VisionTower = QWEN25_VL_7B_VISION): Promise<DeviceFit[]> {
  const mlpOf = async (dir: string) => (await Promise.all(MLP_MODELS.map(async (m) => parseMlpCsv(await readFile(join(profilesDir, 'vidur/compute', dir, m, 'mlp.csv'), 'utf8'))))).flat();
  const attention = parseAttentionCsv(gunzipSync(await readFile(join(profilesDir, ATTENTION_TABLE))).toString('utf8'));
  const a100 = fitRates(await mlpOf('a100'), attention);
  const out: DeviceFit[] = [];
  for (const [device, t] of Object.entries(DEVICE_TABLES)) {
    const mlp = device === 'a100' ? undefined : await mlpOf(t.dir);
    const scale = mlp ? fitRates(mlp, attention).gemmTflops / a100.gemmTflops : 1;
    const rates = mlp ? fitRates(mlp, attention, scale) : a100;
    out.push({ device, preset: t.preset, rates, attentionScale: scale, encoder: deriveEncoder(tower, rates), tables: [...MLP_MODELS.map((m) => `vidur/compute/${t.dir}/${m}/mlp.csv`), ATTENTION_TABLE] });
  }
  return out;
}

const sig = (x: number) => Number(x.toPrecision(4));

/** The derivation as the preset file's comment block and the encoder row per preset. */
export function encoderReport(fits: readonly DeviceFit[], tower: VisionTower = QWEN25_VL_7B_VISION): string {
  const lines = [
    `# encoder rows: ${tower.name} (${tower.source}: ${tower.layers} layers, hidden ${tower.hidden}, MLP ${tower.ffn}${tower.gatedMlp ? ' gated' : ''},`,
    `#   ${tower.heads} heads, patch ${tower.patchSize}, ${tower.merge}×${tower.merge} merge, ${tower.fullAttentionLayers} full-attention layers, the rest windows of ${tower.windowPatches} patches, out ${tower.outHidden}),`,
    `#   derived by \`cornserve simulate fit-encoder --profiles DIR\` (sim/fit/vision-tower.ts) from vidur mlp.csv GEMM rows`,
    `#   (${GEMM_OPS.join(', ')}; Llama-2-7B and CodeLlama-34B, all TP shards, ≥ ${MIN_TOKENS} tokens), element-wise rows`,
    `#   (${ELEMENTWISE_OPS.join(', ')}; TP1) and the A100 attention table (${ATTENTION_TABLE}, full prompts):`,
  ];
  for (const f of fits) {
    const r = f.rates;
    const e = f.encoder;
    lines.push(
      `#   ${f.preset}: GEMM ${sig(r.gemmTflops)} TFLOP/s + ${sig(r.gemmLaunchMs)} ms (${r.samples.gemm} rows), element-wise ${sig(r.elementwiseMsPerMElement)} ms/M elements, ` +
      `attention ${sig(r.attentionTflops)} TFLOP/s${f.attentionScale !== 1 ? ` (A100's × ${sig(f.attentionScale)}, the GEMM ratio: no ${f.device} table)` : ''}` +
      ` → a ${sig(e.a)} ms, b ${sig(e.b)} ms/patch, c ${sig(e.c)} ms/patch²; a 1280×720 image (${e.examplePatches} patches): ${sig(e.exampleMs.total)} ms` +
      ` (GEMM ${sig(e.exampleMs.gemm)}, element-wise ${sig(e.exampleMs.elementwise)}, attention ${sig(e.exampleMs.attention)})`,
    );
  }
  lines.push(`#   kernel time only (no Python/launch gaps between kernels, no preprocessing): a floor for a real engine.`);
  for (const f of fits) {
    const e = f.encoder;
    lines.push(`${f.preset}: { a: ${sig(e.a)}, b: ${sig(e.b)}, c: ${sig(e.c)}, patchSize: ${tower.patchSize}, llmTokensPerUnit: ${sig(e.llmTokensPerUnit)}, bytesPerUnit: ${sig(e.bytesPerUnit)} }`);
  }
  return lines.join('\n');
}
