import test from 'ava';
import sharp from 'sharp';
import { modelDir } from '../../../helpers/models.js';
import { type LoadedModel, loadModel } from '../../../../executors/models/loader.js';
import { type Embeddings, generateAudio, generateAudioOnce, generateImage } from '../../../../executors/models/run.js';
import { Prng } from '../../../../executors/models/onnx/prng.js';
import { ModelErrorCode } from '../../../../executors/models/errors.js';

let imageGen: LoadedModel;
let audioGen: LoadedModel;
test.before(async () => {
  const opts = { sessionOptions: { intraOpNumThreads: 1 } };
  imageGen = await loadModel(await modelDir('tiny-image-gen'), opts);
  audioGen = await loadModel(await modelDir('tiny-audio-gen'), opts);
});
test.after.always(async () => {
  await imageGen?.close();
  await audioGen?.close();
});

function embeddings(rows: number, hidden: number, seed: number): Embeddings {
  const rng = new Prng(seed);
  return { data: Float32Array.from({ length: rows * hidden }, () => rng.next() * 2 - 1), shape: [rows, hidden] };
}

test('the image generator output decodes as a PNG of the requested size', async (t) => {
  const { png } = await generateImage(imageGen, embeddings(7, 256, 1), { height: 50, width: 70, numInferenceSteps: 3 });
  const meta = await sharp(png).metadata();
  t.is(meta.format, 'png');
  t.is(meta.width, 70);
  t.is(meta.height, 50);
});

test('image pixels are in [0, 1]', async (t) => {
  const { rgb } = await generateImage(imageGen, embeddings(3, 256, 2), { height: 32, width: 32 });
  t.true(rgb.every((v) => v >= 0 && v <= 1));
});

test('image generation is deterministic for the same embeddings and seed', async (t) => {
  const e = embeddings(5, 256, 3);
  const a = await generateImage(imageGen, e, { height: 40, width: 40, numInferenceSteps: 2 });
  const b = await generateImage(imageGen, e, { height: 40, width: 40, numInferenceSteps: 2 });
  t.deepEqual(a.png, b.png);
});

test('the number of inference steps changes the image', async (t) => {
  const e = embeddings(5, 256, 4);
  const a = await generateImage(imageGen, e, { height: 32, width: 32, numInferenceSteps: 1 });
  const b = await generateImage(imageGen, e, { height: 32, width: 32, numInferenceSteps: 5 });
  t.notDeepEqual(a.rgb, b.rgb);
});

test('different embeddings give different images', async (t) => {
  const a = await generateImage(imageGen, embeddings(5, 256, 5), { height: 32, width: 32 });
  const b = await generateImage(imageGen, embeddings(5, 256, 6), { height: 32, width: 32 });
  t.notDeepEqual(a.rgb, b.rgb);
});

test('an image larger than the limit is rejected with MODEL_INPUT_TOO_LARGE', async (t) => {
  const e = await t.throwsAsync(generateImage(imageGen, embeddings(2, 256, 1), { height: 4096, width: 64 }));
  t.is((e as { code?: string }).code, ModelErrorCode.INPUT_TOO_LARGE);
});

test('embeddings of the wrong hidden size are rejected with MODEL_INPUT_INVALID', async (t) => {
  const e = await t.throwsAsync(generateImage(imageGen, embeddings(2, 192, 1), { height: 32, width: 32 }));
  t.is((e as { code?: string }).code, ModelErrorCode.INPUT_INVALID);
});

test('the audio generator makes 240 samples per frame in [-1, 1]', async (t) => {
  const wave = await generateAudioOnce(audioGen, embeddings(10, 256, 7));
  t.is(wave.length, 2400);
  t.true(wave.every((v) => v >= -1 && v <= 1));
});

test('audio chunks with enough left context concatenate to the one-shot output', async (t) => {
  const e = embeddings(23, 256, 8);
  const once = await generateAudioOnce(audioGen, e);
  const parts: Float32Array[] = [];
  for await (const c of generateAudio(audioGen, e, { chunkSize: 5, leftContextSize: 2 })) parts.push(c);
  t.is(parts.length, 5);
  const joined = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) { joined.set(p, o); o += p.length; }
  t.is(joined.length, once.length);
  let maxDiff = 0;
  for (let i = 0; i < once.length; i++) maxDiff = Math.max(maxDiff, Math.abs(once[i]! - joined[i]!));
  t.true(maxDiff < 1e-5, `max diff ${maxDiff}`);
});

test('audio chunks without left context differ from one-shot at chunk starts', async (t) => {
  const e = embeddings(10, 256, 9);
  const once = await generateAudioOnce(audioGen, e);
  const parts: Float32Array[] = [];
  for await (const c of generateAudio(audioGen, e, { chunkSize: 5, leftContextSize: 0 })) parts.push(c);
  const second = parts[1]!;
  let maxDiff = 0;
  for (let i = 0; i < 240; i++) maxDiff = Math.max(maxDiff, Math.abs(once[1200 + i]! - second[i]!));
  t.true(maxDiff > 1e-3);
});
