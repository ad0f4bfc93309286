/**
 * Eric serving a CLIP vision tower in the Hugging Face layout (tiny-clip: config.json, preprocessor_config.json,
 * onnx/vision_model.onnx), named by its folder path: images go through the PIL-compatible preprocessing of
 * preprocessor_config.json and the tower's image_embeds are forwarded through the sidecar, or answered as JSON.
 */
import { join } from 'node:path';
import test from 'ava';
import ort from 'onnxruntime-node';
import { AutoProcessor, CLIPVisionModelWithProjection, RawImage, env } from '@huggingface/transformers';
import { encoderManifest } from '../../../executors/models/hf-encoder.js';
import { decodeRgb, preprocessImageNchw } from '../../../executors/models/preprocess/image.js';
import { type EricFixture, dataUrl, maxAbsDiff, receiveEmbedding, startEric } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';
import { modelDir } from '../../helpers/models.js';
import { type SidecarCluster, startSidecars } from '../../helpers/sidecar.js';

env.allowRemoteModels = false;

let dir: string;
let sc: SidecarCluster;
let eric: EricFixture;

test.before(async () => {
  dir = await modelDir('tiny-clip');
  sc = await startSidecars({ nodes: [[0, 1]] });
  eric = await startEric({ modality: 'image', modelId: dir, ranks: [0], sidecarSocket: sc.nodeOf(0).socketPath });
});
test.after.always(async () => {
  await eric?.stop();
  await sc?.stop();
});

test('a forwarded embedding of an image that needs resizing and cropping equals onnxruntime run directly on the same pixel_values', async (t) => {
  const jpeg = await makeImage(90, 60, { seed: 8, format: 'jpeg' });
  const res = await eric.embed([{ id: 'clip1', modality: 'image', model_id: dir, url: dataUrl('image/jpeg', jpeg), receiver_sidecar_ranks: [[1]] }]);
  t.is(res.status, 200);
  const got = await receiveEmbedding(await sc.client(1), 'clip1');

  const manifest = await encoderManifest(dir, [dir]);
  const { pixelValues, dims } = await preprocessImageNchw(jpeg, manifest.preprocessing.image!);
  const session = await ort.InferenceSession.create(join(dir, 'onnx/vision_model.onnx'));
  t.teardown(() => session.release());
  const direct = await session.run({ pixel_values: new ort.Tensor('float32', pixelValues, dims) });
  t.deepEqual(got.shape, [1, 48]);
  t.true(maxAbsDiff(got.data as Float32Array, direct.image_embeds!.data as Float32Array) <= 1e-4);
});

test('return_embeddings answers the embedding as JSON; for an image at the model size it equals transformers.js', async (t) => {
  const png = await makeImage(32, 32, { seed: 5 });
  const res = await fetch(`${eric.url}/embeddings`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ return_embeddings: true, data: [{ id: 'clip2', modality: 'image', model_id: dir, url: dataUrl('image/png', png), receiver_sidecar_ranks: null }] }),
  });
  t.is(res.status, 200);
  const body = (await res.json()) as { status: number; embeddings: { id: string; shape: number[]; data: number[] }[] };
  t.is(body.status, 0);
  t.is(body.embeddings.length, 1);
  t.is(body.embeddings[0]!.id, 'clip2');
  t.deepEqual(body.embeddings[0]!.shape, [1, 48]);

  const rgb = await decodeRgb(png);
  const inputs = await (await AutoProcessor.from_pretrained(dir))(new RawImage(rgb.data, rgb.width, rgb.height, 3));
  const reference = await CLIPVisionModelWithProjection.from_pretrained(dir, { dtype: 'fp32' });
  t.teardown(() => reference.dispose());
  const { image_embeds } = await reference(inputs);
  t.true(maxAbsDiff(body.embeddings[0]!.data, image_embeds.data as Float32Array) <= 1e-4);
});
