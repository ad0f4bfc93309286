import test from 'ava';
import { makeImage } from '../../../helpers/media.js';
import { modelDir } from '../../../helpers/models.js';
import { type LoadedModel, loadModel } from '../../../../executors/models/loader.js';
import { type Env, applyStage, graphsForRank, loadRank, runStage, runTensorParallel } from '../../../../executors/models/tensor-parallel.js';
import { preprocessImage } from '../../../../executors/models/preprocess/image.js';
import { preprocessVideo } from '../../../../executors/models/preprocess/video.js';
import { visionFeeds } from '../../../../executors/models/vision-runs.js';
import { EXECUTOR_ENV } from '../../../../lib/descriptor.js';

// Two devices, as the platform assigns a TP-2 executor (CPU "devices"; read when the first onnxruntime session is created).
process.env[EXECUTOR_ENV.deviceOrdinals] = '0,1';

let single: LoadedModel;
let ranks: LoadedModel[];
test.before(async () => {
  const dir = await modelDir('tiny-vision');
  const opts = { sessionOptions: { intraOpNumThreads: 1 } };
  single = await loadModel(dir, { ...opts, modelIds: [] });
  ranks = await Promise.all([0, 1].map((r) => loadRank(dir, r, opts)));
});
test.after.always(async () => {
  await single?.close();
  await Promise.all((ranks ?? []).map((r) => r.close()));
});

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

test('each rank loads only its own shard graphs', (t) => {
  const r1 = graphsForRank(single.manifest, 1);
  t.true(r1.includes('tp.r1.block0.attn'));
  t.false(r1.some((g) => g.startsWith('tp.r0.')));
});

test('TP degree 2 equals the single graph within 1e-4 for an image', async (t) => {
  const feeds = visionFeeds(await preprocessImage(await makeImage(140, 112, { seed: 5 }), single.manifest.preprocessing.image!));
  const ref = (await single.graph('encoder').run(feeds)).features!;
  const env = await runTensorParallel(ranks, feeds);
  t.deepEqual(env.features!.dims, ref.dims);
  const d = maxAbsDiff(env.features!.data as Float32Array, ref.data as Float32Array);
  t.true(d < 1e-4, `max abs diff ${d}`);
});

test('TP degree 2 equals the single graph within 1e-4 for a video (segmented attention)', async (t) => {
  const frames = await Promise.all([0, 1, 2, 3].map((s) => makeImage(56, 84, { seed: s })));
  const m = single.manifest.preprocessing;
  const feeds = visionFeeds(await preprocessVideo(frames, m.image!, m.video!));
  const ref = (await single.graph('encoder').run(feeds)).features!;
  const env = await runTensorParallel(ranks, feeds);
  const d = maxAbsDiff(env.features!.data as Float32Array, ref.data as Float32Array);
  t.true(d < 1e-4, `max abs diff ${d}`);
});

test('dropping one rank\'s partial sums breaks equality (the all-reduce matters)', async (t) => {
  const feeds = visionFeeds(await preprocessImage(await makeImage(56, 56), single.manifest.preprocessing.image!));
  const ref = (await single.graph('encoder').run(feeds)).features!;
  const env: Env = { ...feeds };
  for (const stage of single.manifest.tensor_parallel!.stages) {
    const results = await Promise.all(ranks.map((m, r) => runStage(m, stage, r, env)));
    applyStage(env, stage, stage.kind === 'partial-sum' ? results.slice(0, 1) : results);
  }
  t.true(maxAbsDiff(env.features!.data as Float32Array, ref.data as Float32Array) > 1e-3);
});
