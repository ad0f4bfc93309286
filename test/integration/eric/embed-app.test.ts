/**
 * The image-embedding app (functions/apps/embed.ts) end to end: `cornserve up --models DIR` over a folder holding
 * the CLIP tower as DIR/tiny-clip, the app registered from --apps, a request through the gateway, and the JSON
 * embeddings equal to onnxruntime run directly on the same pixel_values.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import ort from 'onnxruntime-node';
import { encoderManifest } from '../../../executors/models/hf-encoder.js';
import { preprocessImageNchw } from '../../../executors/models/preprocess/image.js';
import { freePort } from '../../../lib/net.js';
import { waitUntil } from '../../../lib/wait.js';
import { dataUrl, maxAbsDiff } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';
import { modelDir } from '../../helpers/models.js';
import { repoRoot } from '../../helpers/repo.js';

let child: ChildProcess | undefined;
let scratch: string | undefined;
test.after.always(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

test('the embed app under `up --models DIR` answers each image\'s CLIP embedding as JSON, equal to a direct onnxruntime run', async (t) => {
  t.timeout(300_000);
  scratch = await mkdtemp(join(tmpdir(), 'cs-embed-app-'));
  const models = join(scratch, 'models');
  const apps = join(scratch, 'apps');
  await mkdir(apps, { recursive: true });
  await cp(await modelDir('tiny-clip'), join(models, 'tiny-clip'), { recursive: true });
  await cp(join(repoRoot, 'functions/apps/embed.ts'), join(apps, 'embed.ts'));

  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, CORNSERVE_LOG_LEVEL: 'warn', CORNSERVE_ADMIN_TOKEN: 'embed-app-test' };
  delete env.CORNSERVE_MODELS;
  child = spawn(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', 'up', '--port', String(port), '--devices', '2', '--models', models, '--apps', apps], { cwd: repoRoot, env });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await waitUntil('up registered embed', () => /\bembed\b/.test(stdout) || child!.exitCode !== null, { timeoutMs: 240_000 }).catch((e: Error) => {
    throw new Error(`${e.message}\nstdout: ${stdout}\nstderr: ${stderr.slice(-3000)}`);
  });
  t.is(child.exitCode, null, stderr.slice(-3000));

  const images = [await makeImage(90, 60, { seed: 4, format: 'jpeg' }), await makeImage(32, 32, { seed: 6 })];
  const res = await fetch(`http://127.0.0.1:${port}/app/invoke/embed`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ request_data: { image_urls: [dataUrl('image/jpeg', images[0]!), dataUrl('image/png', images[1]!)] } }),
  });
  const body = (await res.json()) as { model: string; data: { index: number; embedding: number[] }[] };
  t.is(res.status, 200, JSON.stringify(body));
  t.is(body.model, 'tiny-clip');
  t.deepEqual(body.data.map((d) => d.index), [0, 1]);

  const dir = join(models, 'tiny-clip');
  const manifest = await encoderManifest(dir, ['tiny-clip']);
  const session = await ort.InferenceSession.create(join(dir, 'onnx/vision_model.onnx'));
  t.teardown(() => session.release());
  for (const [i, img] of images.entries()) {
    const { pixelValues, dims } = await preprocessImageNchw(img, manifest.preprocessing.image!);
    const direct = await session.run({ pixel_values: new ort.Tensor('float32', pixelValues, dims) });
    t.is(body.data[i]!.embedding.length, 48);
    t.true(maxAbsDiff(body.data[i]!.embedding, direct.image_embeds!.data as Float32Array) <= 1e-4, `image ${i}`);
  }

  const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  t.is(await exited, 0, stderr.slice(-3000));
});
