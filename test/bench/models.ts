/**
 * Model benchmark: what the project's runners cost over bare onnxruntime session.run on prepared inputs,
 * measured in the same run (intraOpNumThreads = 1, medians; alternating rounds). ratio = figure / baseline (lower is better).
 *  - encodeImage 224x224 (decode + resize + patchify + encoder + projector) vs the encoder + projector runs alone;
 *  - a batch of 8 images (one packed run) vs 8 single-image runs, per image;
 *  - the in-process TP-2 reference runner vs the single encoder graph;
 *  - encodeAudio 5 s WAV (decode + resample + log-mel + encoder) vs the encoder + projector runs alone;
 *  - Whisper's log-mel features of a 30 s clip (n_fft 400, mixed-radix FFT) vs transformers.js's WhisperFeatureExtractor,
 *    and vs the same features by a direct 400-point DFT per frame;
 *  - generateImage 256x256, 4 steps (incl. PNG) vs the prior/denoise/decoder runs alone;
 *  - generateAudio streamed in chunks of 50 (+4 context) vs one-shot, 200 frames.
 * Run alone: node --import tsx test/bench/models.ts
 */
import { modelDir } from '../helpers/models.js';
import { makeImage, tone } from '../helpers/media.js';
import { loadModel, type LoadedModel } from '../../executors/models/loader.js';
import { encodeAudio, encodeImage, encodeImages, f32, generateAudio, generateAudioOnce, generateImage, i64, type Embeddings } from '../../executors/models/run.js';
import { visionFeeds } from '../../executors/models/vision-runs.js';
import { preprocessImage } from '../../executors/models/preprocess/image.js';
import { preprocessAudio } from '../../executors/models/preprocess/audio.js';
import { encodeWav } from '../../executors/models/preprocess/wav.js';
import { whisperFeatures } from '../../executors/models/preprocess/whisper-features.js';
import { encoderManifest } from '../../executors/models/hf-encoder.js';
import { directWhisperFeatures } from '../helpers/direct-dft.js';
import { AutoFeatureExtractor, env as transformersEnv } from '@huggingface/transformers';
import { loadRank, runTensorParallel } from '../../executors/models/tensor-parallel.js';
import { Prng } from '../../executors/models/onnx/prng.js';
import { alternating, type BenchResult, formatTable } from './types.js';

/** ms per call (median over `n` calls each, alternating op/baseline after a warm-up). */
async function compare(name: string, n: number, op: () => Promise<unknown>, baselineName: string, baseline: () => Promise<unknown>, notes?: string, perItem = 1): Promise<BenchResult> {
  const { figure, baseline: base } = await alternating(n, op, baseline, { perItem });
  return { name, figure, unit: 'ms', baseline: base, baselineName, ratio: figure / base, ...(notes ? { notes } : {}) };
}

function randomEmbeddings(rows: number, hidden: number): Embeddings {
  const rng = new Prng(11);
  return { data: Float32Array.from({ length: rows * hidden }, () => rng.next() * 2 - 1), shape: [rows, hidden] };
}

export async function run(): Promise<BenchResult[]> {
  const opts = { sessionOptions: { intraOpNumThreads: 1 } };
  const out: BenchResult[] = [];
  const A = 'cornserve/tiny-vlm-a';

  const vision = await loadModel(await modelDir('tiny-vision'), opts);
  const img = await makeImage(224, 224, { seed: 1, format: 'jpeg' });
  const feeds = visionFeeds(await preprocessImage(img, vision.manifest.preprocessing.image!));
  const proj = vision.adapter(A, 'projector')!;
  const bare = async () => proj.run({ features: (await vision.graph('encoder').run(feeds)).features! });
  out.push(await compare('vision encodeImage 224x224 (jpeg → [64, 256])', 30, () => encodeImage(vision, img, A), 'bare encoder+projector session.run', bare));

  const imgs = await Promise.all(Array.from({ length: 8 }, (_, i) => makeImage(224, 224, { seed: i, format: 'jpeg' })));
  out.push(await compare('vision batch of 8 images, per image', 10, () => encodeImages(vision, imgs, A), '8 single encodeImage calls, per image',
    async () => { for (const b of imgs) await encodeImage(vision, b, A); }, 'one packed run with block-diagonal attention', 8));

  const ranks = await Promise.all([0, 1].map((r) => loadRank(vision.dir, r, opts)));
  out.push(await compare('vision TP-2 in-process reference (224x224)', 20, () => runTensorParallel(ranks, feeds), 'single encoder graph',
    () => vision.graph('encoder').run(feeds), '2 ranks run concurrently in one process on 2 cores; 11 stages'));

  const audio = await loadModel(await modelDir('tiny-audio'), opts);
  const wav = encodeWav([tone(440, 5, 44100)], 44100);
  const mel = preprocessAudio(wav, audio.manifest.preprocessing.audio!);
  const aproj = audio.adapter(A, 'projector')!;
  out.push(await compare('audio encodeAudio 5 s 44.1 kHz WAV (→ [251, 256])', 10, () => encodeAudio(audio, wav, A), 'bare encoder+projector session.run',
    async () => aproj.run({ features: (await audio.graph('encoder').run({ input_features: f32(mel.data, [mel.nMels, mel.frames]) })).features! }),
    'figure includes resampling and the TS log-mel'));

  // The reference our Whisper features equal (test/unit/executors/models/hf-whisper.test.ts), on the same clip.
  transformersEnv.allowRemoteModels = false;
  const whisperDir = await modelDir('tiny-whisper');
  const wpre = (await encoderManifest(whisperDir, ['w'])).preprocessing.audio!;
  const clip30 = tone(440, 30, 16000, 0.4);
  const extractor = await AutoFeatureExtractor.from_pretrained(whisperDir);
  out.push(await compare('audio Whisper log-mel features, 30 s clip (→ [80, 3000])', 10, async () => whisperFeatures(clip30, wpre, 30),
    'transformers.js WhisperFeatureExtractor, same clip', () => extractor(clip30), 'n_fft 400 by the mixed-radix FFT on the packed real frame (200 = 4·2·5·5)'));
  out.push(await compare('audio Whisper log-mel features, 30 s clip, per clip', 3, async () => whisperFeatures(clip30, wpre, 30),
    'direct 400-point DFT per frame, same clip', async () => directWhisperFeatures(clip30, wpre, 30), 'target ≤ 30 ms per clip on a quiet machine'));

  const igen = await loadModel(await modelDir('tiny-image-gen'), opts);
  const emb = randomEmbeddings(16, 256);
  const gen = igen.manifest.generation.image!;
  const sizes = (c: number, h: number, w: number) => i64(BigInt64Array.from([1n, BigInt(c), BigInt(h), BigInt(w)]), [4]);
  const bareGen = async () => {
    const p = await igen.graph('prior').run({ embeddings: f32(emb.data, emb.shape), latent_sizes: sizes(gen.latent_channels, 64, 64) });
    let latent = p.cond_latent!;
    for (let s = 0; s < 4; s++) {
      latent = (await igen.graph('denoise').run({ latent, cond_latent: p.cond_latent!, cond: p.cond!, timestep: f32(Float32Array.of(1), [1]), step_scale: f32(Float32Array.of(0.5), [1]) })).next_latent!;
    }
    return igen.graph('decoder').run({ latent, image_sizes: sizes(3, 256, 256) });
  };
  out.push(await compare('image gen 256x256, 4 steps (→ PNG)', 10, () => generateImage(igen, emb, { height: 256, width: 256, numInferenceSteps: 4 }),
    'bare prior+4 denoise+decoder session.run', bareGen, 'figure includes noise, clamping and PNG encoding'));

  const agen = await loadModel(await modelDir('tiny-audio-gen'), opts);
  const aemb = randomEmbeddings(200, 256);
  out.push(await compare('audio gen 200 frames streamed (chunk 50, context 4)', 20,
    async () => { for await (const c of generateAudio(agen, aemb, { chunkSize: 50, leftContextSize: 4 })) void c; },
    'one-shot vocoder run', () => generateAudioOnce(agen, aemb), '4 session runs vs 1; 2 s of 24 kHz audio'));

  for (const m of [vision, ...ranks, audio, igen, agen]) await m.close();
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(formatTable(await run()));
}
