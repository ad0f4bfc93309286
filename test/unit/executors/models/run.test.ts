/**
 * run.ts output placement: a projector writes into a view the caller gives (Eric's sidecar shared memory), the
 * result's data IS that view, and the values equal the unplaced run. Models without a projector never ask.
 */
import test from 'ava';
import { makeImage, tone } from '../../../helpers/media.js';
import { modelDir } from '../../../helpers/models.js';
import { type LoadedModel, loadModel } from '../../../../executors/models/loader.js';
import { encoderManifest } from '../../../../executors/models/hf-encoder.js';
import { type OutputPlacement, encodeImage, runAudio, runVision, runVisionNchw } from '../../../../executors/models/run.js';
import { preprocessImage, preprocessImageNchw } from '../../../../executors/models/preprocess/image.js';
import { preprocessAudio } from '../../../../executors/models/preprocess/audio.js';
import { encodeWav } from '../../../../executors/models/preprocess/wav.js';

const A = 'cornserve/tiny-vlm-a';
const SESSION = { sessionOptions: { intraOpNumThreads: 1 } };
let vision: LoadedModel;
test.before(async () => { vision = await loadModel(await modelDir('tiny-vision'), SESSION); });
test.after.always(async () => vision?.close());

/** A placement handing out views at an offset into one plain ArrayBuffer (as a shared-memory segment is), recording each shape asked for. */
function arena(floats = 1 << 20): { place: OutputPlacement; asked: [number, number][]; buffer: ArrayBuffer } {
  const buffer = new ArrayBuffer(floats * 4);
  const asked: [number, number][] = [];
  let next = 16; // not at the buffer's start: a view at an offset
  return {
    buffer, asked,
    place: async (shape) => {
      asked.push(shape);
      const view = new Float32Array(buffer, next * 4, shape[0] * shape[1]);
      next += view.length;
      return view;
    },
  };
}

test('a placed projector output is written into the given view and equals the unplaced run', async (t) => {
  const img = await makeImage(140, 112, { seed: 3 });
  const want = await encodeImage(vision, img, A);
  const a = arena();
  const [got] = await runVision(vision, [await preprocessImage(img, vision.manifest.preprocessing.image!)], A, [a.place]);
  t.deepEqual(a.asked, [want.shape]);
  t.is(got!.data.buffer, a.buffer, 'the result is the placed view, not a copy');
  t.deepEqual(got!.shape, want.shape);
  t.deepEqual(got!.data, want.data);
});

test('in a batch each placed item gets its own view and unplaced items are allocated as usual, all equal to single runs', async (t) => {
  const imgs = await Promise.all([[56, 56, 1], [112, 84, 2], [200, 140, 3]].map(([w, h, s]) => makeImage(w!, h!, { seed: s })));
  const inputs = await Promise.all(imgs.map((b) => preprocessImage(b, vision.manifest.preprocessing.image!)));
  const a = arena();
  const got = await runVision(vision, inputs, A, [a.place, undefined, a.place]);
  t.is(a.asked.length, 2);
  t.is(got[0]!.data.buffer, a.buffer);
  t.not(got[1]!.data.buffer, a.buffer);
  t.is(got[2]!.data.buffer, a.buffer);
  for (const [i, b] of imgs.entries()) {
    const single = await encodeImage(vision, b, A);
    t.deepEqual(got[i]!.shape, single.shape);
    t.true(got[i]!.data.every((v, k) => Math.abs(v - single.data[k]!) < 1e-5), `item ${i}`);
  }
});

test('a placement that declines (undefined) leaves the run as it was', async (t) => {
  const img = await makeImage(56, 84, { seed: 4 });
  let asked = 0;
  const [got] = await runVision(vision, [await preprocessImage(img, vision.manifest.preprocessing.image!)], A, [async () => { asked++; return undefined; }]);
  t.is(asked, 1);
  t.deepEqual(got!.data, (await encodeImage(vision, img, A)).data);
});

test('an audio encoder\'s projector output is placed too', async (t) => {
  const audio = await loadModel(await modelDir('tiny-audio'), SESSION);
  t.teardown(() => audio.close());
  const mel = preprocessAudio(encodeWav([tone(440, 0.5, 16000)], 16000), audio.manifest.preprocessing.audio!);
  const want = await runAudio(audio, mel, A);
  const a = arena();
  const got = await runAudio(audio, mel, A, a.place);
  t.deepEqual(a.asked, [want.shape]);
  t.is(got.data.buffer, a.buffer);
  t.deepEqual(got.data, want.data);
});

test('a model without a projector never asks for a placement', async (t) => {
  const dir = await modelDir('tiny-clip');
  const clip = await loadModel(dir, { ...SESSION, modelIds: [dir], manifest: await encoderManifest(dir, [dir]) });
  t.teardown(() => clip.close());
  const { pixelValues, dims } = await preprocessImageNchw(await makeImage(32, 32, { seed: 5 }), clip.manifest.preprocessing.image!);
  const a = arena();
  const got = await runVisionNchw(clip, pixelValues, dims, dir, a.place);
  t.is(a.asked.length, 0);
  t.not(got.data.buffer, a.buffer);
});
