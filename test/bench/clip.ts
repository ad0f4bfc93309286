/**
 * CLIP tower benchmark (a Hugging Face vision folder served as it is): images/s that Eric serves from the Hugging Face folder tiny-clip (config.json,
 * preprocessor_config.json, onnx/vision_model.onnx) at saturation — HTTP → router (2 preprocessing threads: decode,
 * PIL-compatible resize 224 → 32 + crop + normalise) → ZeroMQ → engine (batches ≤ 8) → worker (1 onnxruntime
 * thread, image_embeds [1, 48]), answered without forwarding — next to a direct loop with the SAME threads in the
 * same run: the same JPEG bytes preprocessed by 2 pool threads (preprocessImageNchw), each image encoded by
 * session.run on 1 onnxruntime thread, one at a time, 16 images in flight.
 * Rounds alternate served / direct (order flipped every pair); ratio = median of per-pair served / direct.
 * Run alone: node --import tsx test/bench/main.ts --only clip
 */
import { PreprocessPool } from '../../executors/common/preprocess-pool.js';
import { encoderManifest } from '../../executors/models/hf-encoder.js';
import { loadModel } from '../../executors/models/loader.js';
import type { PixelValues } from '../../executors/models/preprocess/image.js';
import { runVisionNchw } from '../../executors/models/run.js';
import { logger } from '../../lib/log.js';
import { type EricFixture, dataUrl, startEric } from '../helpers/eric.js';
import { makeImage } from '../helpers/media.js';
import { modelDir } from '../helpers/models.js';
import { BATCH, CLIENTS, PAIRS, PREPROCESS_THREADS, ROUND_MS, SIZE } from './eric.js';
import { median, formatTable, keepAlivePoster, rate as measure, serial, type BenchResult } from './types.js';

/** Images/s of `step` run back to back by `loops` concurrent loops for `ms`. */
const rate = async (ms: number, loops: number, step: () => Promise<void>) => (await measure(ms, loops, 1, step)).rate;


export async function run(): Promise<BenchResult[]> {
  const dir = await modelDir('tiny-clip');
  const jpegs = await Promise.all(Array.from({ length: BATCH }, (_, i) => makeImage(SIZE, SIZE, { seed: i, format: 'jpeg' })));
  const manifest = await encoderManifest(dir, [dir]);
  const direct = await loadModel(dir, { manifest, sessionOptions: { intraOpNumThreads: 1, interOpNumThreads: 1 } });
  const pool = await PreprocessPool.start<Uint8Array, PixelValues>({
    script: new URL('./threads/preprocess-nchw.ts', import.meta.url), size: PREPROCESS_THREADS,
    workerData: manifest.preprocessing.image!, log: logger('bench-clip'),
  });
  let eric: EricFixture | undefined;
  try {
    eric = await startEric({ modality: 'image', modelId: dir, ranks: [0], maxBatchSize: BATCH, args: ['--preprocess-threads', String(PREPROCESS_THREADS)] });
    const post = keepAlivePoster(eric.url, CLIENTS);
    const bodies = jpegs.map((b) => (id: string) =>
      `{"data":[{"id":"${id}","modality":"image","model_id":${JSON.stringify(dir)},"receiver_sidecar_ranks":null,"url":"${dataUrl('image/jpeg', b)}"}]}`);
    let n = 0;
    const served = async () => {
      const id = `${(n++).toString(16)}c`;
      const r = await post('/embeddings', bodies[n % BATCH]!(id));
      if (r.status !== 200) throw new Error(`eric answered ${r.status}: ${r.text}`);
    };
    const encode = serial();
    let k = 0;
    const directStep = async () => {
      const { pixelValues, dims } = await pool.run(jpegs[k++ % BATCH]!.slice()); // the pool transfers (detaches) its input
      await encode(() => runVisionNchw(direct, pixelValues, dims, dir));
    };

    await rate(1_500, CLIENTS, served); // warm-up: sessions, JIT, sharp, connections, threads
    await rate(1_000, CLIENTS, directStep);
    const s: number[] = [];
    const d: number[] = [];
    for (let p = 0; p < PAIRS; p++) {
      if (p % 2 === 0) { s.push(await rate(ROUND_MS, CLIENTS, served)); d.push(await rate(ROUND_MS, CLIENTS, directStep)); }
      else { d.push(await rate(ROUND_MS, CLIENTS, directStep)); s.push(await rate(ROUND_MS, CLIENTS, served)); }
    }
    return [{
      name: 'CLIP tower (HF folder tiny-clip) served by Eric, 224x224 JPEG → image_embeds',
      figure: median(s), unit: 'img/s', baseline: median(d),
      baselineName: `direct onnxruntime, ${PREPROCESS_THREADS} preprocessing threads + 1 encoding thread`,
      ratio: median(s.map((x, i) => x / d[i]!)),
      notes: `${CLIENTS} keep-alive HTTP clients (1 image per request), max batch ${BATCH}, ${PREPROCESS_THREADS} preprocessing threads, 1 worker `
        + `(1 onnxruntime thread), no forwarding; direct = the same threads, ${CLIENTS} images in flight; ${PAIRS} alternating `
        + `${ROUND_MS / 1000} s round pairs, ratio = median of per-pair served/direct (higher is better)`,
    }];
  } finally {
    await eric?.stop();
    await pool.close();
    await direct.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(formatTable(await run()));
