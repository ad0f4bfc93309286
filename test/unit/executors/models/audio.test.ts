import test from 'ava';
import { tone } from '../../../helpers/media.js';
import { modelDir } from '../../../helpers/models.js';
import { type LoadedModel, loadModel } from '../../../../executors/models/loader.js';
import { encodeAudio } from '../../../../executors/models/run.js';
import { encodeWav } from '../../../../executors/models/preprocess/wav.js';
import { ModelErrorCode } from '../../../../executors/models/errors.js';

let model: LoadedModel;
test.before(async () => {
  model = await loadModel(await modelDir('tiny-audio'), { sessionOptions: { intraOpNumThreads: 1 } });
});
test.after.always(async () => model?.close());

test('one second of 16 kHz audio encodes to [51, 256]', async (t) => {
  // 1 + 16000/160 = 101 mel frames; conv stride 2 → ceil(101 / 2) = 51
  const e = await encodeAudio(model, encodeWav([tone(440, 1, 16000)], 16000), 'cornserve/tiny-vlm-a');
  t.deepEqual(e.shape, [51, 256]);
  t.true(e.data.every(Number.isFinite));
});

test('a 44.1 kHz float WAV is resampled and encodes to the same frame count', async (t) => {
  const e = await encodeAudio(model, encodeWav([tone(440, 1, 44100)], 44100, 'float32'), 'cornserve/tiny-vlm-a');
  t.deepEqual(e.shape, [51, 256]);
});

test('different sounds give different embeddings', async (t) => {
  const a = await encodeAudio(model, encodeWav([tone(300, 0.5, 16000)], 16000), 'cornserve/tiny-vlm-a');
  const b = await encodeAudio(model, encodeWav([tone(3000, 0.5, 16000)], 16000), 'cornserve/tiny-vlm-a');
  t.notDeepEqual(a.data, b.data);
});

test('tiny-vlm-b is not served by the audio encoder', async (t) => {
  const e = await t.throwsAsync(encodeAudio(model, encodeWav([tone(440, 0.2, 16000)], 16000), 'cornserve/tiny-vlm-b'));
  t.is((e as { code?: string }).code, ModelErrorCode.UNSUPPORTED);
});

test('a corrupt WAV is rejected with MODEL_INPUT_CORRUPT', async (t) => {
  const e = await t.throwsAsync(encodeAudio(model, Buffer.from('not a wav at all'), 'cornserve/tiny-vlm-a'));
  t.is((e as { code?: string }).code, ModelErrorCode.INPUT_CORRUPT);
});
