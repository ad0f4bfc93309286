import test from 'ava';
import { makeImage } from '../../../helpers/media.js';
import { modelDir } from '../../../helpers/models.js';
import { type LoadedModel, loadModel } from '../../../../executors/models/loader.js';
import { encodeImage, encodeImages, encodeVideo } from '../../../../executors/models/run.js';
import { sampleFrameIndices } from '../../../../executors/models/preprocess/video.js';
import { smartResize } from '../../../../executors/models/preprocess/image.js';
import { ModelErrorCode } from '../../../../executors/models/errors.js';

let model: LoadedModel;
test.before(async () => {
  model = await loadModel(await modelDir('tiny-vision'), { sessionOptions: { intraOpNumThreads: 1 } });
});
test.after.always(async () => model?.close());

const A = 'cornserve/tiny-vlm-a';
const B = 'cornserve/tiny-vlm-b';

test('an image encodes to [tokens, 256] for tiny-vlm-a', async (t) => {
  const e = await encodeImage(model, await makeImage(56, 56), A);
  t.deepEqual(e.shape, [4, 256]);
  t.is(e.data.length, 4 * 256);
  t.true(e.data.every(Number.isFinite));
});

test('the same image encodes to hidden 192 for tiny-vlm-b through its own projector', async (t) => {
  const e = await encodeImage(model, await makeImage(56, 56), B);
  t.deepEqual(e.shape, [4, 192]);
});

for (const [w, h] of [[56, 56], [100, 150], [640, 480], [33, 1000], [1500, 20]] as const) {
  test(`token count follows the grid rule for a ${w}x${h} image`, async (t) => {
    const e = await encodeImage(model, await makeImage(w, h), A);
    const r = smartResize(h, w, { factor: 28, minPixels: 56 * 56, maxPixels: 448 * 448 });
    t.is(e.shape[0], (r.height / 28) * (r.width / 28));
  });
}

test('encoding is deterministic', async (t) => {
  const img = await makeImage(84, 56, { seed: 3 });
  t.deepEqual((await encodeImage(model, img, A)).data, (await encodeImage(model, img, A)).data);
});

test('different images give different embeddings', async (t) => {
  const a = await encodeImage(model, await makeImage(56, 56, { seed: 1 }), A);
  const b = await encodeImage(model, await makeImage(56, 56, { seed: 2 }), A);
  t.notDeepEqual(a.data, b.data);
});

test('a batch of N images equals N single runs', async (t) => {
  const imgs = await Promise.all([[56, 56, 1], [112, 84, 2], [200, 140, 3]].map(([w, h, s]) => makeImage(w!, h!, { seed: s })));
  const batch = await encodeImages(model, imgs, A);
  t.is(batch.length, 3);
  for (let i = 0; i < 3; i++) {
    const single = await encodeImage(model, imgs[i]!, A);
    t.deepEqual(batch[i]!.shape, single.shape);
    let maxDiff = 0;
    for (let k = 0; k < single.data.length; k++) maxDiff = Math.max(maxDiff, Math.abs(single.data[k]! - batch[i]!.data[k]!));
    t.true(maxDiff < 1e-4, `item ${i}: max diff ${maxDiff}`);
  }
});

test('an unknown model id is rejected with MODEL_UNSUPPORTED', async (t) => {
  const e = await t.throwsAsync(encodeImage(model, await makeImage(56, 56), 'cornserve/nope'));
  t.is((e as { code?: string }).code, ModelErrorCode.UNSUPPORTED);
});

test('frame sampling keeps every frame up to 32', (t) => {
  t.deepEqual(sampleFrameIndices(5, 32), [0, 1, 2, 3, 4]);
});

test('frame sampling picks 32 uniformly spread frames including both ends', (t) => {
  const idx = sampleFrameIndices(100, 32);
  t.is(idx.length, 32);
  t.is(idx[0], 0);
  t.is(idx[31], 99);
  const gaps = idx.slice(1).map((v, i) => v - idx[i]!);
  t.true(gaps.every((g) => g >= 3 && g <= 4));
});

test('a video of 40 frames encodes to (32/2) x grid tokens', async (t) => {
  const frames = await Promise.all(Array.from({ length: 40 }, (_, i) => makeImage(56, 56, { seed: i, format: 'jpeg' })));
  const e = await encodeVideo(model, frames, A);
  t.deepEqual(e.shape, [16 * 4, 256]);
});

test('an odd number of video frames is padded to pairs', async (t) => {
  const frames = await Promise.all(Array.from({ length: 3 }, (_, i) => makeImage(56, 84, { seed: i })));
  const e = await encodeVideo(model, frames, B);
  t.deepEqual(e.shape, [2 * 6, 192]);
});
