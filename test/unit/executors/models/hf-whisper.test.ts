/**
 * A Whisper-style audio encoder in the Hugging Face layout (tiny-whisper from `make models`: config.json,
 * preprocessor_config.json (WhisperFeatureExtractor), onnx/encoder_model.onnx): its features against transformers.js's
 * WhisperFeatureExtractor loading the same folder (no network), and the manifest made from the folder.
 */
import test from 'ava';
import { AutoFeatureExtractor, env } from '@huggingface/transformers';
import { encoderManifest } from '../../../../executors/models/hf-encoder.js';
import { checkHfFolder } from '../../../../executors/models/hf-folder.js';
import { loadModel } from '../../../../executors/models/loader.js';
import { encodeAudio } from '../../../../executors/models/run.js';
import { preprocessAudio, wavToSamples } from '../../../../executors/models/preprocess/audio.js';
import { encodeWav } from '../../../../executors/models/preprocess/wav.js';
import { whisperFeatures } from '../../../../executors/models/preprocess/whisper-features.js';
import { directWhisperFeatures } from '../../../helpers/direct-dft.js';
import { maxAbsDiff } from '../../../helpers/eric.js';
import { tone } from '../../../helpers/media.js';
import { modelDir } from '../../../helpers/models.js';

env.allowRemoteModels = false;

/** 3 s at 16 kHz: two tones, one amplitude-modulated, as float32 WAV (no quantisation). */
const clip = () => {
  const a = tone(440, 3, 16000, 0.4);
  const b = tone(1234, 3, 16000, 0.2);
  return encodeWav([a.map((v, i) => v + b[i]! * Math.cos(i / 3000))], 16000, 'float32');
};

test('Whisper input_features [80, 3000] equal transformers.js WhisperFeatureExtractor within 1e-5', async (t) => {
  t.timeout(120_000);
  const dir = await modelDir('tiny-whisper');
  const pre = (await encoderManifest(dir, ['w'])).preprocessing.audio!;
  const wav = clip();
  const ours = preprocessAudio(wav, pre);
  t.deepEqual([ours.nMels, ours.frames], [80, 3000]);
  const extractor = await AutoFeatureExtractor.from_pretrained(dir);
  const { input_features } = await extractor(wavToSamples(wav, pre));
  t.deepEqual(input_features.dims, [1, 80, 3000]);
  t.true(maxAbsDiff(ours.data, input_features.data as Float32Array) <= 1e-5);
});

test('Whisper features by the mixed-radix FFT equal the direct 400-point DFT within 1e-5', async (t) => {
  const pre = (await encoderManifest(await modelDir('tiny-whisper'), ['w'])).preprocessing.audio!;
  const samples = wavToSamples(clip(), pre);
  const fast = whisperFeatures(samples, pre, 2);
  const direct = directWhisperFeatures(samples, pre, 2);
  t.deepEqual([fast.nMels, fast.frames], [80, 200]);
  t.true(maxAbsDiff(fast.data, direct.data) <= 1e-5, `max |Δ| ${maxAbsDiff(fast.data, direct.data)}`);
});

test('a Whisper folder is served as an audio encoder: input_features [1, 80, 3000] → last_hidden_state [1500, d_model]', async (t) => {
  t.timeout(120_000);
  const dir = await modelDir('tiny-whisper');
  const r = await checkHfFolder(dir);
  t.is(r.folder.kind, 'audio-encoder');
  t.deepEqual(r.problems, []);
  const manifest = await encoderManifest(dir, ['w']);
  t.is(manifest.family, 'audio-encoder');
  t.like(manifest.preprocessing.audio, { sample_rate: 16000, n_mels: 80, n_fft: 400, hop_length: 160, max_seconds: 30, whisper: { chunk_length: 30 } });
  const model = await loadModel(dir, { manifest });
  t.teardown(() => model.close());
  const emb = await encodeAudio(model, clip(), 'w');
  t.deepEqual(emb.shape, [1500, 64]);
  t.true(emb.data.every(Number.isFinite));
});
