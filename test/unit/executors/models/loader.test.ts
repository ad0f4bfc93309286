import test from 'ava';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelDir, modelsDir } from '../../../helpers/models.js';
import { loadManifest, loadModel } from '../../../../executors/models/loader.js';
import { findModel, listModels } from '../../../../executors/models/catalog.js';
import { ModelErrorCode } from '../../../../executors/models/errors.js';

const tmpDirs: string[] = [];
async function copyModel(name: 'tiny-audio-gen' | 'tiny-vision'): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'cs-models-'));
  tmpDirs.push(root);
  const dir = join(root, name);
  await cp(await modelDir(name), dir, { recursive: true });
  return dir;
}
async function editManifest(dir: string, edit: (m: Record<string, any>) => void): Promise<void> {
  const m = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'));
  edit(m);
  await writeFile(join(dir, 'manifest.json'), JSON.stringify(m));
}
test.after.always(async () => {
  await Promise.all(tmpDirs.map((d) => rm(d, { recursive: true, force: true })));
});

test('the loader opens every shared and adapter graph of a model', async (t) => {
  const m = await loadModel(await modelDir('tiny-vision'));
  t.deepEqual(Object.keys(m.sessions), ['encoder']);
  t.deepEqual(Object.keys(m.adapters).sort(), ['cornserve/tiny-vlm-a', 'cornserve/tiny-vlm-b']);
  t.truthy(m.adapter('cornserve/tiny-vlm-b', 'projector'));
  await m.close();
});

test('a manifest with a wrong field type is rejected naming the field', async (t) => {
  const dir = await copyModel('tiny-audio-gen');
  await editManifest(dir, (m) => { m.generation.audio.samples_per_frame = 'many'; });
  const e = await t.throwsAsync(loadModel(dir), { message: /generation\.audio\.samples_per_frame/ });
  t.is((e as { code?: string }).code, ModelErrorCode.MANIFEST_INVALID);
});

test('a manifest missing a required graph is rejected naming it', async (t) => {
  const dir = await copyModel('tiny-audio-gen');
  await editManifest(dir, (m) => { delete m.graphs.vocoder; });
  await t.throwsAsync(loadManifest(dir), { message: /graphs\.vocoder/ });
});

test('a manifest with an unknown family is rejected naming the field', async (t) => {
  const dir = await copyModel('tiny-audio-gen');
  await editManifest(dir, (m) => { m.family = 'toaster'; });
  await t.throwsAsync(loadManifest(dir), { message: /family/ });
});

test('a manifest naming an input the graph lacks is a mismatch', async (t) => {
  const dir = await copyModel('tiny-audio-gen');
  await editManifest(dir, (m) => { m.graphs.vocoder.inputs[0].name = 'codes'; });
  const e = await t.throwsAsync(loadModel(dir), { message: /input 'codes'/ });
  t.is((e as { code?: string }).code, ModelErrorCode.MANIFEST_MISMATCH);
});

test('a manifest pointing at a missing file is a mismatch', async (t) => {
  const dir = await copyModel('tiny-audio-gen');
  await rm(join(dir, 'vocoder.onnx'));
  const e = await t.throwsAsync(loadModel(dir), { message: /vocoder\.onnx does not exist/ });
  t.is((e as { code?: string }).code, ModelErrorCode.MANIFEST_MISMATCH);
});

test('a folder without a manifest is MODEL_NOT_FOUND', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'cs-empty-'));
  tmpDirs.push(dir);
  const e = await t.throwsAsync(loadModel(dir));
  t.is((e as { code?: string }).code, ModelErrorCode.NOT_FOUND);
});

test('the llm family is accepted by the schema', async (t) => {
  const dir = await copyModel('tiny-audio-gen');
  await editManifest(dir, (m) => { m.family = 'llm'; m.modalities = ['text']; m.config = { layers: 2 }; });
  const m = await loadManifest(dir);
  t.is(m.family, 'llm');
});

test('the catalog finds the folder serving a model id for a modality', async (t) => {
  const hit = await findModel('cornserve/tiny-vlm-b', 'video', await modelsDir(), 'vision-encoder');
  t.is(hit.manifest.name, 'tiny-vision');
});

test('the catalog tells audio and image encoders apart for the same model id', async (t) => {
  const hit = await findModel('cornserve/tiny-vlm-a', 'audio', await modelsDir(), 'audio-encoder');
  t.is(hit.manifest.name, 'tiny-audio');
});

test('the catalog reports MODEL_NOT_FOUND for an unserved model id', async (t) => {
  const e = await t.throwsAsync(findModel('cornserve/tiny-vlm-b', 'audio', await modelsDir()));
  t.is((e as { code?: string }).code, ModelErrorCode.NOT_FOUND);
});

test('the catalog lists a folder with an invalid manifest apart', async (t) => {
  const dir = await copyModel('tiny-audio-gen');
  await editManifest(dir, (m) => { m.dtype = 'int4'; });
  const cat = await listModels(join(dir, '..'));
  t.is(cat.entries.length, 0);
  t.is(cat.invalid.length, 1);
  t.regex(cat.invalid[0]!.message, /dtype/);
});
