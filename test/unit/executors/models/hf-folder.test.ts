/**
 * Hugging Face folders: naming a model (path → model directories → built-in), `cornserve models` listing and
 * `cornserve models check` errors on broken copies of the built tiny-qwen2 folder, and Optimum's decoder layouts.
 */
import { cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { modelsCheckCommand, modelsListCommand } from '../../../../control/cli/models.js';
import { resolveModelFolder } from '../../../../executors/models/catalog.js';
import { checkHfFolder, inspectHfFolder } from '../../../../executors/models/hf-folder.js';
import { TINY_QWEN2_MERGED, buildMergedDecoder, hfVocab } from '../../../../executors/models/builders/hf-decoder.js';
import { ParamStore } from '../../../../executors/models/onnx/layers.js';
import { llmDir } from '../../../helpers/llm.js';
import { modelsDir } from '../../../helpers/models.js';

let scratch: string;
test.before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'cs-hf-folder-'));
});
test.after.always(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** A copy of tiny-qwen2 at `name`, with `edit` applied to its config.json. */
async function copy(name: string, edit: (c: Record<string, unknown>) => void = () => {}): Promise<string> {
  const dir = join(scratch, name);
  await cp(await llmDir('tiny-qwen2'), dir, { recursive: true });
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  edit(config);
  await writeFile(join(dir, 'config.json'), JSON.stringify(config));
  return dir;
}

const io = () => {
  const lines: string[] = [];
  return { lines, io: { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) } };
};

test('a modelId that is a folder path resolves to that folder', async (t) => {
  const dir = await copy('by-path');
  t.is(await resolveModelFolder(dir, { modality: 'text', family: 'llm', dirs: [] }), dir);
});

test('a modelId that names a folder under a model directory resolves there, before the built-in models', async (t) => {
  const dirs = [join(scratch, 'dir-a'), join(scratch, 'dir-b')];
  await mkdir(dirs[0]!, { recursive: true });
  await mkdir(join(dirs[1]!, 'org'), { recursive: true });
  await cp(await llmDir('tiny-qwen2'), join(dirs[1]!, 'org', 'qwen'), { recursive: true });
  t.is(await resolveModelFolder('org/qwen', { modality: 'text', family: 'llm', dirs }), join(dirs[1]!, 'org', 'qwen'));
});

test('a built-in model id resolves to its built folder when no model directory has it', async (t) => {
  t.is(await resolveModelFolder('cornserve/tiny-vlm-b', { modality: 'text', family: 'llm', dirs: [scratch], builtinDir: await modelsDir() }), join(await modelsDir(), 'tiny-lm-b'));
});

test('an unknown modelId is MODEL_NOT_FOUND naming the model directories searched', async (t) => {
  const e = await t.throwsAsync(resolveModelFolder('nope/model', { modality: 'text', family: 'llm', dirs: [scratch], builtinDir: await modelsDir() }));
  t.regex(e!.message, /'nope\/model' is not a folder path, not a folder under the model directories \(.*cs-hf-folder-/);
});

test('cornserve models lists a Hugging Face folder with its family, part, dtype and size', async (t) => {
  const dir = join(scratch, 'listed');
  await mkdir(dir);
  await cp(await llmDir('tiny-qwen2'), join(dir, 'qwen'), { recursive: true });
  await cp(join(dir, 'qwen', 'onnx', 'model.onnx'), join(dir, 'qwen', 'onnx', 'model_fp16.onnx'));
  const { io: out } = io();
  const rows = await modelsListCommand([dir], out);
  t.is(rows.length, 1);
  t.like(rows[0], { name: 'qwen', layout: 'hugging-face', family: 'decoder (qwen2)' });
  t.deepEqual(rows[0]!.dtypes.sort(), ['fp16', 'fp32']);
  t.deepEqual(rows[0]!.parts.sort(), ['onnx/model.onnx', 'onnx/model_fp16.onnx']);
  t.true(rows[0]!.bytes > 100_000);
});

test('models check passes on the built decoder folder', async (t) => {
  const { lines, io: out } = io();
  await modelsCheckCommand(await llmDir('tiny-qwen2'), out);
  t.is(lines[lines.length - 1], 'ok');
});

test('models check takes a name as `cornserve models` lists it', async (t) => {
  const { lines, io: out } = io();
  await modelsCheckCommand('tiny-qwen2', out);
  t.regex(lines[0]!, /tiny-qwen2: decoder/);
  t.is(lines[lines.length - 1], 'ok');
});

test('models check of a path that does not exist says so', async (t) => {
  await t.throwsAsync(modelsCheckCommand(join(scratch, 'nonexistent'), io().io), { message: /nonexistent does not exist: it is neither a folder nor a model name/ });
});

test('models check: KV shapes that disagree with config.json num_key_value_heads are named', async (t) => {
  const dir = await copy('bad-kv-heads', (c) => (c.num_key_value_heads = 4));
  const r = await checkHfFolder(dir);
  t.true(r.problems.includes("onnx/model.onnx: input 'past_key_values.0.key' dim 1 is 2 but config.json says 4"), r.problems.join('\n'));
  await t.throwsAsync(modelsCheckCommand(dir, io().io), { message: /problem\(s\):\n {2}- onnx\/model\.onnx: input 'past_key_values\.0\.key' dim 1 is 2/ });
});

test('models check: more layers in config.json than the graph has are missing past_key_values inputs', async (t) => {
  const dir = await copy('bad-layers', (c) => (c.num_hidden_layers = 3));
  const r = await checkHfFolder(dir);
  t.true(r.problems.some((p) => p.startsWith("onnx/model.onnx: missing input 'past_key_values.2.key'")), r.problems.join('\n'));
});

test('models check: a decoder with other input names reports the missing and the unexpected ones', async (t) => {
  const dir = await copy('bad-inputs');
  await cp(join(await modelsDir(), 'tiny-lm-b', 'decoder.onnx'), join(dir, 'onnx', 'model.onnx'));
  const r = await checkHfFolder(dir);
  t.true(r.problems.some((p) => p.startsWith("onnx/model.onnx: missing input 'input_ids'")), r.problems.join('\n'));
  t.true(r.problems.includes('onnx/model.onnx: unexpected inputs inputs_embeds'), r.problems.join('\n'));
});

test('a folder with config.json but no recognised ONNX part is a clear error', async (t) => {
  const dir = join(scratch, 'no-part');
  await mkdir(join(dir, 'onnx'), { recursive: true });
  await writeFile(join(dir, 'config.json'), '{"model_type":"qwen2"}');
  await writeFile(join(dir, 'onnx', 'something_else.onnx'), 'x');
  await t.throwsAsync(inspectHfFolder(dir), { message: /no recognised ONNX part \(found onnx\/something_else\.onnx; expected one of model\.onnx/ });
});

test('a vision-language folder missing one of its three parts names the missing part', async (t) => {
  const dir = await copy('half-vlm', (c) => (c.model_type = 'qwen2_vl'));
  await cp(join(dir, 'onnx', 'model.onnx'), join(dir, 'onnx', 'vision_encoder.onnx'));
  await t.throwsAsync(inspectHfFolder(dir), { message: /half-vlm: vlm is missing its embed_tokens part/ });
});

test('a config.json missing a field the decoder needs names the field', async (t) => {
  const dir = await copy('no-heads', (c) => delete c.num_attention_heads);
  const r = await checkHfFolder(dir);
  t.regex(r.problems.join('\n'), /config\.json: num_attention_heads: /);
});

test('models check accepts Optimum\'s merged decoder under onnx/ and at the folder root, and names the layout', async (t) => {
  const root = join(scratch, 'merged-root');
  await cp(await llmDir('tiny-qwen2-merged'), root, { recursive: true });
  await rename(join(root, 'onnx', 'decoder_model_merged.onnx'), join(root, 'decoder_model_merged.onnx'));
  for (const dir of [await llmDir('tiny-qwen2-merged'), root]) {
    const { lines, io: out } = io();
    await modelsCheckCommand(dir, out);
    t.true(lines.includes('  layout: merged: Optimum merged decoder (use_cache_branch: false on the prompt, true after)'), lines.join('\n'));
    t.is(lines[lines.length - 1], 'ok');
  }
});

test('models check accepts Optimum\'s decoder_model + decoder_with_past_model pair and names the layout', async (t) => {
  const { lines, io: out } = io();
  await modelsCheckCommand(await llmDir('tiny-qwen2-pair'), out);
  t.true(lines.includes('  layout: pair: Optimum pair (decoder_model for the prompt, decoder_with_past_model after)'), lines.join('\n'));
  t.true(lines.some((l) => l.startsWith('  checked onnx/decoder_model.onnx (decoder_no_past, fp32)')), lines.join('\n'));
  t.is(lines[lines.length - 1], 'ok');
});

test('models check: a merged decoder whose use_cache_branch is not bool is named', async (t) => {
  const dir = join(scratch, 'merged-int64');
  await cp(await llmDir('tiny-qwen2-merged'), dir, { recursive: true });
  const v = hfVocab();
  await writeFile(join(dir, 'onnx', 'decoder_model_merged.onnx'), buildMergedDecoder(new ParamStore(TINY_QWEN2_MERGED.seed), TINY_QWEN2_MERGED, v, 'INT64').toBytes());
  await t.throwsAsync(modelsCheckCommand(dir, io().io), { message: /onnx\/decoder_model_merged\.onnx: input 'use_cache_branch' is int64, expected bool/ });
});

test('models check: decoder_with_past_model.onnx without decoder_model.onnx is named', async (t) => {
  const dir = join(scratch, 'half-pair');
  await cp(await llmDir('tiny-qwen2-pair'), dir, { recursive: true });
  await rm(join(dir, 'onnx', 'decoder_model.onnx'));
  await t.throwsAsync(modelsCheckCommand(dir, io().io), { message: /decoder_with_past_model\.onnx needs decoder_model\.onnx beside it/ });
});
