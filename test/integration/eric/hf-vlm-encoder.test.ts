/**
 * Eric serving a Hugging Face split VLM's vision_encoder (tiny-qwen2-vl, Qwen2-VL style: pixel_values patches +
 * grid_thw → image_features), named by its folder path: Qwen2-VL preprocessing from preprocessor_config.json, the
 * features forwarded through the sidecar equal onnxruntime run directly on the folder's vision_encoder.onnx.
 */
import test from 'ava';
import { encoderManifest } from '../../../executors/models/hf-encoder.js';
import { preprocessImage } from '../../../executors/models/preprocess/image.js';
import { type EricFixture, dataUrl, maxAbsDiff, receiveEmbedding, startEric } from '../../helpers/eric.js';
import { referenceVlm } from '../../helpers/hf-reference.js';
import { llmDir } from '../../helpers/llm.js';
import { makeImage } from '../../helpers/media.js';
import { type SidecarCluster, startSidecars } from '../../helpers/sidecar.js';

let dir: string;
let sc: SidecarCluster;
let eric: EricFixture;

test.before(async () => {
  dir = await llmDir('tiny-qwen2-vl');
  sc = await startSidecars({ nodes: [[0, 1]] });
  eric = await startEric({ modality: 'image', modelId: dir, ranks: [0], sidecarSocket: sc.nodeOf(0).socketPath });
});
test.after.always(async () => {
  await eric?.stop();
  await sc?.stop();
});

test('forwarded image features of a split VLM equal its vision_encoder run directly within 1e-4, one row per 2x2 patch window', async (t) => {
  const ref = await referenceVlm(dir);
  t.teardown(() => ref.close());
  const pre = (await encoderManifest(dir, [dir])).preprocessing.image!;
  for (const [id, w, h] of [['vlm1', 130, 70], ['vlm2', 40, 300]] as const) {
    const png = await makeImage(w, h, { seed: w });
    const res = await eric.embed([{ id, modality: 'image', model_id: dir, url: dataUrl('image/png', png), receiver_sidecar_ranks: [[1]] }]);
    t.is(res.status, 200, JSON.stringify(res.body));
    const got = await receiveEmbedding(await sc.client(1), id);
    const item = await preprocessImage(png, pre);
    const direct = await ref.features(item);
    t.deepEqual(got.shape, [item.grid.h * item.grid.w / 4, 64]);
    t.deepEqual(got.shape, direct.shape);
    t.true(maxAbsDiff(got.data as Float32Array, direct.data) <= 1e-4, id);
  }
});
