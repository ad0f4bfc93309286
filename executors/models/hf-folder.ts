/**
 * Hugging Face model folders: the layouts Optimum exports and onnx-community / transformers.js publish —
 * `config.json` (+ `generation_config.json`, `tokenizer.json`, `tokenizer_config.json`,
 * `preprocessor_config.json`) and ONNX parts under `onnx/` (or the folder itself, as `optimum-cli` writes them),
 * named `<part><suffix>.onnx` with transformers.js's dtype suffixes (`` fp32, `_fp16`, `_quantized`, ...).
 *
 * `inspectHfFolder` names the kind of model and its parts without opening ONNX Runtime; `checkHfFolder` opens
 * each part and compares its inputs and outputs with what the kind needs and with config.json.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { z } from 'zod';
import { modelErrors } from './errors.js';
import { createSession } from './loader.js';

export const HF_CONFIG_FILE = 'config.json';

/** transformers.js dtype → file-name suffix. */
export const DTYPE_SUFFIX = {
  fp32: '', fp16: '_fp16', q8: '_quantized', int8: '_int8', uint8: '_uint8', q4: '_q4', q4f16: '_q4f16', bnb4: '_bnb4',
} as const;
export type HfDtype = keyof typeof DTYPE_SUFFIX;

/** Part roles and the base file names that fill them, in preference order. */
const PART_NAMES = {
  decoder: ['model', 'decoder_model_merged', 'decoder_with_past_model'],
  /** Optimum's no-past decoder: the prompt's half of the older `decoder_model` + `decoder_with_past_model` pair. */
  decoder_no_past: ['decoder_model'],
  embed_tokens: ['embed_tokens'],
  vision: ['vision_encoder', 'vision_model'],
  audio_encoder: ['encoder_model', 'audio_encoder'],
} as const;
export type PartRole = keyof typeof PART_NAMES;

/**
 * `decoder`: a decoder-only LLM taking input_ids. `vlm`: vision encoder + embed_tokens + a decoder taking
 * inputs_embeds (Qwen2-VL split export). `vision-tower`: CLIP/SigLIP `vision_model`. `audio-encoder`: Whisper-style.
 */
export type HfKind = 'decoder' | 'vlm' | 'vision-tower' | 'audio-encoder';

export interface HfPart { role: PartRole; file: string; dtype: HfDtype; bytes: number }

export interface HfFolder {
  dir: string;
  /** The folder's name: what `modelId` names under a models directory. */
  name: string;
  kind: HfKind;
  modelType: string;
  config: Record<string, unknown>;
  /** Per role, every dtype variant found (fp32 first when present). */
  parts: Partial<Record<PartRole, HfPart[]>>;
  /** Bytes of the ONNX files (external data included). */
  bytes: number;
}

const exists = (p: string) => stat(p).then(() => true, () => false);

/** True when `dir` looks like a Hugging Face export (config.json plus ONNX files), whatever its validity. */
export async function isHfFolder(dir: string): Promise<boolean> {
  if (!(await exists(join(dir, HF_CONFIG_FILE)))) return false;
  return (await onnxFiles(dir)).length > 0;
}

async function onnxFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const sub of ['onnx', '']) {
    const names = await readdir(join(dir, sub)).catch(() => [] as string[]);
    for (const n of names) if (n.endsWith('.onnx')) out.push(sub ? `${sub}/${n}` : n);
  }
  return out.sort();
}

async function readJson(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw modelErrors.notFound(`${path} does not exist`, { path });
  }
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('not a JSON object');
    return v as Record<string, unknown>;
  } catch (e) {
    throw modelErrors.manifestInvalid(`${path}: not valid JSON (${(e as Error).message})`, { path });
  }
}

export async function readOptionalJson(path: string): Promise<Record<string, unknown> | undefined> {
  return (await exists(path)) ? readJson(path) : undefined;
}

/** Splits `vision_model_fp16.onnx` into base `vision_model` and dtype `fp16` (unknown suffixes: fp32 base). */
function parseFileName(file: string): { base: string; dtype: HfDtype } {
  const stem = basename(file, '.onnx');
  for (const [dtype, suffix] of Object.entries(DTYPE_SUFFIX) as [HfDtype, string][]) {
    if (suffix && stem.endsWith(suffix)) return { base: stem.slice(0, -suffix.length), dtype };
  }
  return { base: stem, dtype: 'fp32' };
}

async function fileBytes(dir: string, file: string): Promise<number> {
  let n = (await stat(join(dir, file))).size;
  for (const extra of [`${file}_data`, `${file}.data`]) n += await stat(join(dir, extra)).then((s) => s.size, () => 0);
  return n;
}

export async function inspectHfFolder(dir: string): Promise<HfFolder> {
  const config = await readJson(join(dir, HF_CONFIG_FILE));
  const files = await onnxFiles(dir);
  if (!files.length) throw modelErrors.manifestMismatch(`${dir}: no ONNX files (looked in onnx/ and the folder itself)`, { dir });
  const parts: Partial<Record<PartRole, HfPart[]>> = {};
  let bytes = 0;
  for (const file of files) {
    const { base, dtype } = parseFileName(file);
    const size = await fileBytes(dir, file);
    bytes += size;
    for (const [role, names] of Object.entries(PART_NAMES) as [PartRole, readonly string[]][]) {
      if (!names.includes(base)) continue;
      const list = (parts[role] ??= []);
      list.push({ role, file, dtype, bytes: size });
      // fp32 first, then the base-name preference order.
      list.sort((a, b) => Number(a.dtype !== 'fp32') - Number(b.dtype !== 'fp32') || names.indexOf(parseFileName(a.file).base) - names.indexOf(parseFileName(b.file).base));
    }
  }
  const modelType = typeof config.model_type === 'string' ? config.model_type : 'unknown';
  let kind: HfKind;
  // A vision-language config (qwen2_vl, llava, ...) must have all three parts; say which is missing.
  if (/(^|_)vl$|llava/.test(modelType) || (parts.vision && parts.embed_tokens && parts.decoder)) kind = 'vlm';
  else if (parts.decoder && !parts.audio_encoder) kind = 'decoder';
  else if (parts.decoder_no_past) {
    throw modelErrors.manifestMismatch(`${dir}: decoder_model.onnx alone has no past_key_values (export with --task text-generation-with-past)`, { dir });
  }
  else if (parts.vision) kind = 'vision-tower';
  else if (parts.audio_encoder) kind = 'audio-encoder';
  else {
    throw modelErrors.manifestMismatch(
      `${dir}: no recognised ONNX part (found ${files.join(', ')}; expected one of ${Object.values(PART_NAMES).flat().map((n) => `${n}.onnx`).join(', ')})`,
      { dir, files },
    );
  }
  if (kind === 'decoder' && parseFileName(parts.decoder![0]!.file).base === 'decoder_with_past_model' && !parts.decoder_no_past) {
    throw modelErrors.manifestMismatch(`${dir}: decoder_with_past_model.onnx needs decoder_model.onnx beside it (Optimum's pair: the prompt runs without a past)`, { dir });
  }
  const need: Record<HfKind, PartRole[]> = { decoder: ['decoder'], vlm: ['vision', 'embed_tokens', 'decoder'], 'vision-tower': ['vision'], 'audio-encoder': ['audio_encoder'] };
  for (const role of need[kind]) if (!parts[role]) throw modelErrors.manifestMismatch(`${dir}: ${kind} is missing its ${role} part`, { dir, role });
  return { dir, name: basename(dir), kind, modelType, config, parts, bytes };
}

/** The part a session is opened on: the fp32 file unless another dtype variant is asked for. */
export function partFile(folder: HfFolder, role: PartRole, dtype: HfDtype = 'fp32'): string {
  const list = folder.parts[role];
  if (!list?.length) throw modelErrors.unsupported(`${folder.dir}: no ${role} part`);
  const hit = list.find((p) => p.dtype === dtype);
  if (!hit) {
    throw modelErrors.unsupported(`${folder.dir}: no ${dtype} ${role} part (has ${list.map((p) => `${p.file} (${p.dtype})`).join(', ')})`);
  }
  return join(folder.dir, hit.file);
}

/**
 * How a decoder-only export lays out its decoder: `single` = one graph with past inputs (`model.onnx`,
 * transformers.js); `merged` = Optimum's `decoder_model_merged.onnx`, a bool `use_cache_branch` [1] choosing
 * between its with-past and no-past branches (false on the prompt, true once a past exists); `pair` = Optimum's
 * older `decoder_model.onnx` (prompt, no past) + `decoder_with_past_model.onnx` (every later step).
 */
export type DecoderLayout = 'single' | 'merged' | 'pair';

export const DECODER_LAYOUT_TEXT: Record<DecoderLayout, string> = {
  single: 'one decoder with past inputs',
  merged: "Optimum merged decoder (use_cache_branch: false on the prompt, true after)",
  pair: "Optimum pair (decoder_model for the prompt, decoder_with_past_model after)",
};

/** The layout of the decoder file chosen for `dtype` (the merged one is recognised by its input, whatever its name). */
export function decoderLayout(decoderFile: string, inputNames: readonly string[]): DecoderLayout {
  if (inputNames.includes('use_cache_branch')) return 'merged';
  return parseFileName(decoderFile).base === 'decoder_with_past_model' ? 'pair' : 'single';
}

/** A decoder's geometry from config.json (text_config for VLMs); errors name the field. */
export interface DecoderGeometry {
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
  maxPositions: number;
}

const DecoderConfig = z.object({
  hidden_size: z.number().int().positive(),
  num_hidden_layers: z.number().int().positive(),
  num_attention_heads: z.number().int().positive(),
  num_key_value_heads: z.number().int().positive().optional(),
  head_dim: z.number().int().positive().optional(),
  vocab_size: z.number().int().positive(),
  max_position_embeddings: z.number().int().positive().default(4096),
});

export function decoderGeometry(folder: Pick<HfFolder, 'dir' | 'config'>): DecoderGeometry {
  const src = (folder.config.text_config as Record<string, unknown> | undefined) ?? folder.config;
  const r = DecoderConfig.safeParse({ ...folder.config, ...src });
  if (!r.success) {
    throw modelErrors.manifestInvalid(`${join(folder.dir, HF_CONFIG_FILE)}: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`, { dir: folder.dir });
  }
  const c = r.data;
  const kvHeads = c.num_key_value_heads ?? c.num_attention_heads;
  if (c.num_attention_heads % kvHeads !== 0) {
    throw modelErrors.manifestInvalid(`${folder.dir}: config.json num_attention_heads ${c.num_attention_heads} is not a multiple of num_key_value_heads ${kvHeads}`);
  }
  return {
    hidden: c.hidden_size, layers: c.num_hidden_layers, heads: c.num_attention_heads, kvHeads,
    headDim: c.head_dim ?? c.hidden_size / c.num_attention_heads, vocab: c.vocab_size, maxPositions: c.max_position_embeddings,
  };
}

/** EOS ids: generation_config.json `eos_token_id` (int or list), else config.json's. */
export function eosIds(config: Record<string, unknown>, generation?: Record<string, unknown>): number[] {
  for (const v of [generation?.eos_token_id, config.eos_token_id]) {
    if (typeof v === 'number') return [v];
    if (Array.isArray(v) && v.every((x) => typeof x === 'number')) return v as number[];
  }
  return [];
}

interface IoSpec { name: string; type: string; shape: readonly (number | string)[] }

/** The names and shapes a part must have, given the kind and config. */
function expectedIo(role: PartRole, kind: HfKind, g: DecoderGeometry | undefined, layout: DecoderLayout): { inputs: IoSpec[]; outputs: IoSpec[]; anyOutputs?: string[] } {
  if (role === 'decoder' || role === 'decoder_no_past') {
    const kv = (prefix: string, len: string) => Array.from({ length: g!.layers }, (_, l) => ['key', 'value'].map((w) => ({
      name: `${prefix}.${l}.${w}`, type: 'float32', shape: ['batch', g!.kvHeads, len, g!.headDim],
    }))).flat();
    return {
      inputs: [
        kind === 'vlm' ? { name: 'inputs_embeds', type: 'float32', shape: ['batch', 'seq', g!.hidden] } : { name: 'input_ids', type: 'int64', shape: ['batch', 'seq'] },
        { name: 'attention_mask', type: 'int64', shape: ['batch', 'total'] },
        { name: 'position_ids', type: 'int64', shape: ['batch', 'seq'] },
        ...(role === 'decoder' ? kv('past_key_values', 'past') : []),
        ...(layout === 'merged' ? [{ name: 'use_cache_branch', type: 'bool', shape: [1] }] : []),
      ],
      outputs: [{ name: 'logits', type: 'float32', shape: ['batch', 'seq', g!.vocab] }, ...kv('present', 'total')],
    };
  }
  if (role === 'embed_tokens') {
    return { inputs: [{ name: 'input_ids', type: 'int64', shape: ['batch', 'seq'] }], outputs: [{ name: 'inputs_embeds', type: 'float32', shape: ['batch', 'seq', g!.hidden] }] };
  }
  if (role === 'vision') {
    return { inputs: [{ name: 'pixel_values', type: 'float32', shape: [] }], outputs: [], anyOutputs: ['image_embeds', 'pooler_output', 'last_hidden_state', 'image_features'] };
  }
  return { inputs: [{ name: 'input_features', type: 'float32', shape: [] }], outputs: [{ name: 'last_hidden_state', type: 'float32', shape: [] }] };
}

export interface CheckReport {
  folder: HfFolder;
  /** A decoder's layout (decoder and vlm folders whose decoder opened). */
  layout?: DecoderLayout;
  /** One line per problem; empty when the folder is usable. */
  problems: string[];
  /** One line per part checked. */
  checked: string[];
}

/**
 * Opens every fp32 part (else the first variant) and compares its I/O with what the kind needs: names,
 * element types and the fixed dims that config.json determines (KV heads, head_dim, hidden size, vocab).
 */
export async function checkHfFolder(dir: string): Promise<CheckReport> {
  const folder = await inspectHfFolder(dir);
  const problems: string[] = [];
  const checked: string[] = [];
  const report: CheckReport = { folder, problems, checked };
  let geometry: DecoderGeometry | undefined;
  if (folder.kind === 'decoder' || folder.kind === 'vlm') {
    try {
      geometry = decoderGeometry(folder);
    } catch (e) {
      problems.push((e as Error).message);
      return report;
    }
  }
  for (const [role, list] of Object.entries(folder.parts) as [PartRole, HfPart[]][]) {
    if (role === 'embed_tokens' && folder.kind !== 'vlm') continue;
    if ((role === 'decoder' || role === 'decoder_no_past') && folder.kind !== 'decoder' && folder.kind !== 'vlm') continue;
    const part = list[0]!;
    let session;
    try {
      session = await createSession(join(dir, part.file));
    } catch (e) {
      problems.push(`${part.file}: onnxruntime cannot load it: ${(e as Error).message}`);
      continue;
    }
    try {
      let layout: DecoderLayout = 'single';
      if (role === 'decoder') layout = report.layout = decoderLayout(part.file, session.inputNames);
      const want = expectedIo(role, folder.kind, geometry, layout);
      const has = (list: readonly { name: string }[], name: string) => list.find((m) => m.name === name);
      const meta = (m: unknown) => m as { name: string; type?: string; shape?: readonly (number | string)[] };
      const ins = session.inputMetadata.map(meta);
      const outs = session.outputMetadata.map(meta);
      const compare = (side: 'input' | 'output', spec: IoSpec, got: ReturnType<typeof meta> | undefined) => {
        if (!got) {
          problems.push(`${part.file}: missing ${side} '${spec.name}' (has ${(side === 'input' ? ins : outs).map((m) => m.name).join(', ')})`);
          return;
        }
        if (part.dtype === 'fp32' && got.type && got.type !== spec.type) problems.push(`${part.file}: ${side} '${spec.name}' is ${got.type}, expected ${spec.type}`);
        spec.shape.forEach((d, i) => {
          const actual = got.shape?.[i];
          if (typeof d === 'number' && typeof actual === 'number' && actual !== d) {
            problems.push(`${part.file}: ${side} '${spec.name}' dim ${i} is ${actual} but config.json says ${d}`);
          }
        });
      };
      for (const spec of want.inputs) compare('input', spec, has(ins, spec.name));
      for (const spec of want.outputs) compare('output', spec, has(outs, spec.name));
      if (want.anyOutputs && !want.anyOutputs.some((n) => has(outs, n))) {
        problems.push(`${part.file}: none of the outputs ${want.anyOutputs.join(' / ')} (has ${outs.map((m) => m.name).join(', ')})`);
      }
      const known = new Set(want.inputs.map((s) => s.name));
      const unexpected = ins.filter((m) => !known.has(m.name) && !(role === 'vision' && m.name === 'grid_thw')).map((m) => m.name);
      if (unexpected.length) problems.push(`${part.file}: unexpected inputs ${unexpected.join(', ')}`);
      checked.push(`${part.file} (${role}, ${part.dtype}): inputs ${ins.map((m) => m.name).join(', ')}`);
    } finally {
      await session.release();
    }
  }
  return report;
}
