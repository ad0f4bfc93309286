/**
 * Vision towers in the Hugging Face layout (tiny-clip, tiny-siglip from `make models`): the manifest made from
 * config.json + preprocessor_config.json, and agreement with transformers.js loading the same local folder (no
 * network) for an image already at the model's size (transformers.js resizes with sharp, not PIL: docs/models.md).
 */
import test from 'ava';
import { AutoProcessor, CLIPVisionModelWithProjection, RawImage, SiglipVisionModel, env } from '@huggingface/transformers';
import { dirname } from 'node:path';
import { findEncoder } from '../../../../executors/eric/model.js';
import { resolveModelFolder } from '../../../../executors/models/catalog.js';
import { encoderManifest, imagePreprocessing } from '../../../../executors/models/hf-encoder.js';
import { checkHfFolder } from '../../../../executors/models/hf-folder.js';
import { loadModel } from '../../../../executors/models/loader.js';
import { encodeImage } from '../../../../executors/models/run.js';
import { decodeRgb, preprocessImageNchw } from '../../../../executors/models/preprocess/image.js';
import { maxAbsDiff } from '../../../helpers/eric.js';
import { makeImage } from '../../../helpers/media.js';
import { modelDir } from '../../../helpers/models.js';

env.allowRemoteModels = false;

const CASES = [
  { name: 'tiny-clip', model: CLIPVisionModelWithProjection, output: 'image_embeds', dim: 48 },
  { name: 'tiny-siglip', model: SiglipVisionModel, output: 'pooler_output', dim: 64 },
] as const;

for (const c of CASES) {
  test(`${c.name}: for an image at the model's size, pixel_values and ${c.output} equal transformers.js within 1e-4`, async (t) => {
    const dir = await modelDir(c.name);
    const manifest = await encoderManifest(dir, [c.name]);
    const model = await loadModel(dir, { manifest });
    t.teardown(() => model.close());
    const png = await makeImage(32, 32, { seed: 3 });
    const ours = await preprocessImageNchw(png, manifest.preprocessing.image!);
    const emb = await encodeImage(model, png, c.name);
    t.deepEqual(emb.shape, [1, c.dim]);

    const rgb = await decodeRgb(png);
    const processor = await AutoProcessor.from_pretrained(dir);
    const inputs = await processor(new RawImage(rgb.data, rgb.width, rgb.height, 3));
    const reference = await (c.model as typeof CLIPVisionModelWithProjection).from_pretrained(dir, { dtype: 'fp32' });
    t.teardown(() => reference.dispose());
    const out = await reference(inputs);
    t.deepEqual(inputs.pixel_values.dims, [...ours.dims]);
    t.true(maxAbsDiff(ours.pixelValues, inputs.pixel_values.data as Float32Array) <= 1e-4);
    t.true(maxAbsDiff(emb.data, out[c.output].data as Float32Array) <= 1e-4);
  });
}

test('the manifest of a CLIP folder: nchw pixel_values at the crop size, image_embeds of projection_dim, PIL steps from preprocessor_config.json', async (t) => {
  const m = await encoderManifest(await modelDir('tiny-clip'), ['some/clip']);
  t.is(m.family, 'vision-encoder');
  t.is(m.graphs.encoder!.file, 'onnx/vision_model.onnx');
  t.is(m.graphs.encoder!.outputs[0]!.name, 'image_embeds');
  t.deepEqual(m.model_ids['some/clip'], { hidden_size: 48, graphs: {} });
  t.deepEqual(m.preprocessing.image!.image_size, { height: 32, width: 32 });
  t.deepEqual(m.preprocessing.image!.pil, { resize: { shortest_edge: 32 }, resample: 'bicubic', center_crop: { height: 32, width: 32 }, rescale_factor: 1 / 255, normalize: true });
});

test('both tower folders pass `cornserve models check` as vision towers', async (t) => {
  for (const c of CASES) {
    const r = await checkHfFolder(await modelDir(c.name));
    t.is(r.folder.kind, 'vision-tower');
    t.deepEqual(r.problems, []);
  }
});

test('preprocessor_config.json problems are clear errors naming the field', (t) => {
  const base = { size: { shortest_edge: 32 }, do_center_crop: true, crop_size: 32 };
  t.regex(t.throws(() => imagePreprocessing({ ...base, resample: 1 }, 'p.json', 8))!.message, /p\.json: resample 1 is not supported/);
  t.regex(t.throws(() => imagePreprocessing({ ...base, crop_size: undefined }, 'p.json', 8))!.message, /crop_size: required when do_center_crop/);
  t.regex(t.throws(() => imagePreprocessing({ ...base, image_mean: [0.5] }, 'p.json', 8))!.message, /image_mean/);
  t.regex(t.throws(() => imagePreprocessing({ size: { shortest_edge: 32 } }, 'p.json', 8))!.message, /no fixed size/);
});

test('a built-in Hugging Face folder is named by its folder name when no model directory has it', async (t) => {
  const dir = await modelDir('tiny-clip');
  t.is(await resolveModelFolder('tiny-clip', { modality: 'image', family: 'vision-encoder', dirs: [], builtinDir: dirname(dir) }), dir);
});

test('Eric refuses a Hugging Face tower for another modality or a tensor-parallel degree, naming why', async (t) => {
  const dir = await modelDir('tiny-clip');
  await t.throwsAsync(findEncoder([dir], 'audio', 1), { message: /vision-tower folder does not take audio/ });
  await t.throwsAsync(findEncoder([dir], 'image', 2), { message: /no tensor-parallel shards of degree 2/ });
  t.is((await findEncoder([dir], 'image', 1)).manifest.graphs.encoder!.outputs[0]!.name, 'image_embeds');
});
