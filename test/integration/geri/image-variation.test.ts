/**
 * The image-variation app end to end: registered and invoked through the gateway, its function calls the
 * dispatcher, which runs Eric (vision encoder) and Geri (image generator) started by the local platform from
 * their descriptors; the embeddings go Eric → sidecar → Geri.
 *
 * The test starts the node's sidecar itself (ranks 0..3, the platform's 4 virtual devices) and hands its
 * socket to the platform (setSidecarUrl) before registering.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import test from 'ava';
import sharp from 'sharp';
import { printAppUsage } from '../../../control/compose/up-output.js';
import { waitUntil } from '../../../lib/wait.js';
import { dataUrl } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';
import { modelsDir } from '../../helpers/models.js';
import { startPlatform, type TestPlatform } from '../../helpers/platform.js';
import { repoRoot } from '../../helpers/repo.js';
import { type SidecarCluster, startSidecars } from '../../helpers/sidecar.js';

const APP = `${repoRoot}/functions/apps/image-variation.ts`;

let sc: SidecarCluster;
let p: TestPlatform;

test.before(async () => {
  const models = await modelsDir();
  sc = await startSidecars({ nodes: [[0, 1, 2, 3]] });
  p = await startPlatform({ devices: 4, childEnv: { CORNSERVE_MODELS_DIR: models } });
  p.platform.setSidecarUrl('local', `unix:${sc.nodes[0]!.socketPath}`);
  await p.register(APP);
});

test.after.always(async () => {
  await p?.stop();
  await sc?.stop();
});

test.serial('image-variation returns a PNG of the requested size, and the sidecar holds nothing afterwards', async (t) => {
  const res = await p.invoke('image-variation', { image_url: dataUrl('image/png', await makeImage(112, 84, { seed: 4 })), width: 96, height: 64 });
  t.is(res.status, 200, await res.clone().text());
  const { image } = (await res.json()) as { image: string };
  const meta = await sharp(Buffer.from(image, 'base64')).metadata();
  t.deepEqual([meta.format, meta.width, meta.height], ['png', 96, 64]);
  await t.notThrowsAsync(waitUntil('sidecar memory back to zero', async () => (await sc.nodes[0]!.health()).bytesInUse === 0, { timeoutMs: 15_000 }));
});

test.serial('without a size the variation is 256x256', async (t) => {
  const res = await p.invoke('image-variation', { image_url: dataUrl('image/jpeg', await makeImage(64, 64, { format: 'jpeg' })) });
  t.is(res.status, 200);
  const meta = await sharp(Buffer.from(((await res.json()) as { image: string }).image, 'base64')).metadata();
  t.deepEqual([meta.width, meta.height], [256, 256]);
});

test.serial('a corrupt image fails the invocation naming the problem; Geri stops waiting and the sidecar holds nothing', async (t) => {
  const res = await p.invoke('image-variation', { image_url: 'data:image/png;base64,aGVsbG8=' });
  t.is(res.status, 422); // bad input stays a 4xx through dispatcher, function and gateway
  t.regex(await res.text(), /cannot be decoded/);
  const geri = (await p.store.listExecutors()).find((r) => r.executorId.startsWith('geri-'))!;
  await t.notThrowsAsync(waitUntil('geri no longer waiting for the embeddings', async () => {
    const info = (await (await fetch(`${geri.url}/info`)).json()) as { receiving: number; inflight: number };
    return info.receiving === 0 && info.inflight === 0;
  }, { timeoutMs: 15_000 }));
  await t.notThrowsAsync(waitUntil('sidecar memory back to zero', async () => (await sc.nodes[0]!.health()).bytesInUse === 0, { timeoutMs: 15_000 }));
});

test.serial("a corrupt image surfaces Eric's own code at the top, names the failed task, and carries no internal address", async (t) => {
  const res = await p.invoke('image-variation', { image_url: 'data:image/png;base64,aGVsbG8=' });
  const text = await res.text();
  t.is(res.status, 422);
  const { error } = JSON.parse(text) as { error: { code: string; message: string; details?: { task?: string; taskId?: string } } };
  t.is(error.code, 'MODEL_INPUT_CORRUPT');
  t.regex(error.details?.task ?? '', /^encoder-image-/);
  t.regex(error.message, /^task encoder-image-\S+ failed: /);
  const executors = await p.store.listExecutors();
  for (const internal of ['127.0.0.1', 'localhost', '.sock', '/tmp/', ...executors.flatMap((e) => [e.executorId, e.url])]) t.false(text.includes(internal), `${internal} in ${text}`);
});

test.serial('the requests `cornserve up` prints for image-variation work as printed', async (t) => {
  const printed: string[] = [];
  printAppUsage(p.gatewayUrl, p.apps.resolve('image-variation'), { out: (l) => printed.push(l), err: () => {} });
  // `  cornserve invoke image-variation '<json>'`: the JSON between the single quotes (it has none of its own).
  const requests = printed.map((l) => /^\s*cornserve invoke image-variation '([^']*)'$/.exec(l)?.[1]).filter((x): x is string => x !== undefined);
  t.is(requests.length, 2, printed.join('\n')); // the required fields, then every field
  for (const data of requests) {
    const res = await p.invoke('image-variation', JSON.parse(data));
    t.is(res.status, 200, `${data.slice(0, 80)}: ${(await res.clone().text()).slice(0, 300)}`);
  }
});

test.serial("the README's sample picture (docs/assets/picture.png) gives a variation", async (t) => {
  const png = await readFile(join(repoRoot, 'docs/assets/picture.png'));
  const res = await p.invoke('image-variation', { image_url: dataUrl('image/png', png), width: 64, height: 64 });
  t.is(res.status, 200, await res.clone().text());
  const meta = await sharp(Buffer.from(((await res.json()) as { image: string }).image, 'base64')).metadata();
  t.deepEqual([meta.format, meta.width, meta.height], ['png', 64, 64]);
});
