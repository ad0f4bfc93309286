/**
 * Geri generating images through HTTP: a real Geri process (router, engine, worker) attached to a real
 * sidecar node; embeddings are put into the sidecar by a producer client the way Eric would send them.
 * Serial: the sidecar's memory accounting is node-wide.
 */
import test from 'ava';
import sharp from 'sharp';
import { generateImage } from '../../../executors/models/generate.js';
import { loadModel } from '../../../executors/models/loader.js';
import { GERI_SESSION_OPTIONS } from '../../../executors/geri/worker/jobs.js';
import { waitUntil } from '../../../lib/wait.js';
import { type Geri, type GeriNode, dataId, embeddings, sendEmbeddings, startGeriNode } from '../../helpers/geri.js';
import { modelDir } from '../../helpers/models.js';

let g: GeriNode;
let geri: Geri;

test.before(async () => {
  g = await startGeriNode({ modality: 'image', maxBatchSize: 4 });
  geri = g.geri;
});

test.after.always(async () => {
  await g?.stop();
});

const memoryFreed = () => g.memoryFreed();

const body = (id: string, o: Record<string, unknown> = {}) => ({ embedding_data_id: id, height: 48, width: 64, num_inference_steps: 2, ...o });

test.serial('an image request answers a PNG of the requested size, equal to a direct generateImage on the same embeddings', async (t) => {
  const id = dataId();
  const emb = embeddings(30, 11);
  await sendEmbeddings(g.producer, id, emb, g.toGeri, 3);
  const res = await geri.post('/image/generate', body(id, { height: 40, width: 72, num_inference_steps: 3, skip_tokens: 2 }));
  t.is(res.status, 200);
  const json = (await res.json()) as { status: number; generated: string };
  t.is(json.status, 0);
  const png = Buffer.from(json.generated, 'base64');
  const meta = await sharp(png).metadata();
  t.deepEqual([meta.format, meta.width, meta.height], ['png', 72, 40]);

  const model = await loadModel(await modelDir('tiny-image-gen'), { sessionOptions: GERI_SESSION_OPTIONS });
  t.teardown(() => model.close());
  const direct = await generateImage(model, emb, { height: 40, width: 72, numInferenceSteps: 3, skipTokens: 2 });
  t.true(png.equals(direct.png));
});

test.serial('the sidecar memory of the embeddings is freed after a successful request', async (t) => {
  const id = dataId();
  await sendEmbeddings(g.producer, id, embeddings(20), g.toGeri, 2);
  t.is((await geri.post('/image/generate', body(id))).status, 200);
  await t.notThrowsAsync(memoryFreed());
});

test.serial('embeddings with another hidden size → 422 GERI_HIDDEN_SIZE_MISMATCH, and their memory is freed', async (t) => {
  const id = dataId();
  await sendEmbeddings(g.producer, id, embeddings(10, 1, 192), g.toGeri, 2);
  const res = await geri.post('/image/generate', body(id));
  t.is(res.status, 422);
  const json = (await res.json()) as { status: number; error_message: string; error: { code: string } };
  t.is(json.status, 1);
  t.is(json.error.code, 'GERI_HIDDEN_SIZE_MISMATCH');
  t.regex(json.error_message, /hidden size 192; this model takes 256/);
  await t.notThrowsAsync(memoryFreed());
});

test.serial('embeddings that never arrive fail the request at its deadline with GERI_EMBEDDINGS_NOT_RECEIVED', async (t) => {
  const id = dataId();
  const res = await geri.post('/image/generate', body(id), { deadlineMs: 800 });
  t.is(res.status, 404);
  const json = (await res.json()) as { error: { code: string; message: string } };
  t.is(json.error.code, 'GERI_EMBEDDINGS_NOT_RECEIVED');
  t.regex(json.error.message, new RegExp(`no embeddings arrived under embedding_data_id '${id}' within \\d+ ms`));
});

test.serial('a client that leaves while its embeddings are awaited: they are still freed when they arrive', async (t) => {
  const id = dataId();
  const abort = new AbortController();
  const pending = geri.post('/image/generate', body(id), { signal: abort.signal }).catch((e: Error) => e);
  await waitUntil('geri waiting for the embeddings', async () => (await geri.info()).receiving === 1);
  abort.abort();
  t.true((await pending) instanceof Error);
  await sendEmbeddings(g.producer, id, embeddings(12), g.toGeri, 2);
  await t.notThrowsAsync(memoryFreed());
  await waitUntil('the request counted as cancelled', async () => (await geri.info()).served.cancelled === 1);
});

test.serial('sizes beyond the model\'s limits → 422 naming the field, and the embeddings sent for it are freed', async (t) => {
  const id = dataId();
  const res = await geri.post('/image/generate', body(id, { height: 4096 }));
  t.is(res.status, 422);
  const json = (await res.json()) as { error: { code: string; message: string } };
  t.is(json.error.code, 'INVALID_INPUT');
  t.regex(json.error.message, /height/);
  await sendEmbeddings(g.producer, id, embeddings(8), g.toGeri);
  await t.notThrowsAsync(memoryFreed());
});

test.serial('skip_tokens that leaves no rows → 422 GERI_EMBEDDINGS_INVALID', async (t) => {
  const id = dataId();
  await sendEmbeddings(g.producer, id, embeddings(5), g.toGeri);
  const res = await geri.post('/image/generate', body(id, { skip_tokens: 5 }));
  t.is(res.status, 422);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'GERI_EMBEDDINGS_INVALID');
  await t.notThrowsAsync(memoryFreed());
});

test.serial('a producer that fails its embeddings → 502 GERI_EMBEDDINGS_FAILED marked producer_failed', async (t) => {
  const id = dataId();
  const pending = geri.post('/image/generate', body(id));
  await waitUntil('geri waiting for the embeddings', async () => (await geri.info()).receiving === 1);
  await g.producer.fail(id, 'encoder crashed', g.toGeri);
  const res = await pending;
  t.is(res.status, 502);
  const json = (await res.json()) as { error: { code: string; details: Record<string, unknown> } };
  t.like(json.error, { code: 'GERI_EMBEDDINGS_FAILED', details: { sidecar: 'SIDECAR_PRODUCER_FAILED', producer_failed: true } });
});

test.serial('a malformed x-cornserve-deadline header → 400 GERI_BAD_DEADLINE', async (t) => {
  const res = await fetch(`${geri.url}/image/generate`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'x-cornserve-deadline': 'tomorrow' }, body: JSON.stringify(body(dataId())),
  });
  t.is(res.status, 400);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'GERI_BAD_DEADLINE');
});

test.serial('a request on the audio route of an image Geri → 400 GERI_WRONG_MODALITY', async (t) => {
  const res = await geri.post('/audio/generate', { embedding_data_id: dataId() }, { deadlineMs: 500 });
  t.is(res.status, 400);
  t.is(((await res.json()) as { error: { code: string } }).error.code, 'GERI_WRONG_MODALITY');
});

test.serial('concurrent requests all get their own image', async (t) => {
  const ids = [dataId(), dataId(), dataId(), dataId()];
  const seeds = [1, 2, 3, 4];
  await Promise.all(ids.map((id, i) => sendEmbeddings(g.producer, id, embeddings(16, seeds[i]), g.toGeri)));
  const answers = await Promise.all(ids.map((id) => geri.post('/image/generate', body(id)).then((r) => r.json() as Promise<{ generated: string }>)));
  t.is(new Set(answers.map((a) => a.generated)).size, 4);
  await t.notThrowsAsync(memoryFreed());
});

test.serial('/health is 200, /info describes the model, /metrics counts requests by outcome', async (t) => {
  t.is((await fetch(`${geri.url}/health`)).status, 200);
  t.like(await geri.info(), { kind: 'geri', modality: 'image', modelId: 'cornserve/tiny-image-gen', hiddenSize: 256, maxBatchSize: 4, sidecar: true });
  const metrics = await geri.metrics();
  t.regex(metrics, /cornserve_geri_requests_total\{[^}]*route="image",outcome="ok"[^}]*\} [1-9]/);
  t.regex(metrics, /cornserve_geri_requests_total\{[^}]*outcome="GERI_HIDDEN_SIZE_MISMATCH"[^}]*\} 1/);
});
