/**
 * Eric serving a Whisper-style audio encoder in the Hugging Face layout (tiny-whisper), named by its folder path:
 * a WAV goes through Whisper's feature extraction (from preprocessor_config.json) and the encoder's
 * last_hidden_state [1500, d_model] is forwarded through the sidecar.
 */
import { join } from 'node:path';
import test from 'ava';
import ort from 'onnxruntime-node';
import { encoderManifest } from '../../../executors/models/hf-encoder.js';
import { preprocessAudio } from '../../../executors/models/preprocess/audio.js';
import { encodeWav } from '../../../executors/models/preprocess/wav.js';
import { dataUrl, forwardedBytes, maxAbsDiff, receiveEmbedding, startEric } from '../../helpers/eric.js';
import { tone } from '../../helpers/media.js';
import { modelDir } from '../../helpers/models.js';
import { startSidecars } from '../../helpers/sidecar.js';

test('a forwarded Whisper encoding of a 44.1 kHz WAV equals onnxruntime run directly on the same input_features, copied into shared memory (no projector to write it there)', async (t) => {
  t.timeout(180_000);
  const dir = await modelDir('tiny-whisper');
  const sc = await startSidecars({ nodes: [[0, 1]], slabs: [{ slotBytes: 4096, slots: 64 }, { slotBytes: 512 * 1024, slots: 8 }] });
  t.teardown(() => sc.stop());
  const eric = await startEric({ modality: 'audio', modelId: dir, ranks: [0], sidecarSocket: sc.nodeOf(0).socketPath, startTimeoutMs: 120_000 });
  t.teardown(() => eric.stop());
  const wav = encodeWav([tone(330, 2, 44100)], 44100);
  const res = await eric.embed([{ id: 'wh1', modality: 'audio', model_id: dir, url: dataUrl('audio/wav', wav), receiver_sidecar_ranks: [[1]] }]);
  t.is(res.status, 200, JSON.stringify(res.body));
  const got = await receiveEmbedding(await sc.client(1), 'wh1', 60_000);

  const mel = preprocessAudio(wav, (await encoderManifest(dir, [dir])).preprocessing.audio!);
  const session = await ort.InferenceSession.create(join(dir, 'onnx/encoder_model.onnx'));
  t.teardown(() => session.release());
  const direct = await session.run({ input_features: new ort.Tensor('float32', mel.data, [1, mel.nMels, mel.frames]) });
  t.deepEqual(got.shape, [1500, 64]);
  t.true(maxAbsDiff(got.data as Float32Array, direct.last_hidden_state!.data as Float32Array) <= 1e-4);
  t.deepEqual(await forwardedBytes(eric), { inPlace: 0, copied: 1500 * 64 * 4 });
});
