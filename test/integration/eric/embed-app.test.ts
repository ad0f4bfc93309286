/**
 * The image-embedding app (functions/apps/embed.ts) end to end: `cornserve up --models DIR` over a folder holding
 * the CLIP tower as DIR/tiny-clip, the app registered from --apps, a request through the gateway, and the JSON
 * embeddings equal to onnxruntime run directly on the same pixel_values.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import ort from 'onnxruntime-node';
import { encoderManifest } from '../../../executors/models/hf-encoder.js';
import { preprocessImageNchw } from '../../../executors/models/preprocess/image.js';
import { dataUrl, maxAbsDiff } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';
import { modelDir } from '../../helpers/models.js';
import { repoRoot } from '../../helpers/repo.js';
import { type UpWithModels, startUpWithModels } from '../../helpers/up-process.js';

let up: UpWithModels | undefined;
test.after.always(async () => {
  await up?.cleanup();
});

test('the embed app under `up --models DIR` answers each image\'s CLIP embedding as JSON, equal to a direct onnxruntime run', async (t) => {
  t.timeout(300_000);
  up = await startUpWithModels({
    prefix: 'cs-embed-app-', app: 'embed', models: { 'tiny-clip': await modelDir('tiny-clip') },
    apps: { 'embed.ts': await readFile(join(repoRoot, 'functions/apps/embed.ts'), 'utf8') },
  });

  const images = [await makeImage(90, 60, { seed: 4, format: 'jpeg' }), await makeImage(32, 32, { seed: 6 })];
  const res = await fetch(`${up.url}/app/invoke/embed`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ request_data: { image_urls: [dataUrl('image/jpeg', images[0]!), dataUrl('image/png', images[1]!)] } }),
  });
  const body = (await res.json()) as { model: string; data: { index: number; embedding: number[] }[] };
  t.is(res.status, 200, JSON.stringify(body));
  t.is(body.model, 'tiny-clip');
  t.deepEqual(body.data.map((d) => d.index), [0, 1]);

  const dir = join(up.models, 'tiny-clip');
  const manifest = await encoderManifest(dir, ['tiny-clip']);
  const session = await ort.InferenceSession.create(join(dir, 'onnx/vision_model.onnx'));
  t.teardown(() => session.release());
  for (const [i, img] of images.entries()) {
    const { pixelValues, dims } = await preprocessImageNchw(img, manifest.preprocessing.image!);
    const direct = await session.run({ pixel_values: new ort.Tensor('float32', pixelValues, dims) });
    t.is(body.data[i]!.embedding.length, 48);
    t.true(maxAbsDiff(body.data[i]!.embedding, direct.image_embeds!.data as Float32Array) <= 1e-4, `image ${i}`);
  }
  t.is(await up.stop(), 0, up.stderr().slice(-3000));
});
