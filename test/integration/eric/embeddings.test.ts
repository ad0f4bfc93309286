/**
 * Eric end to end (real Eric process, engine process, worker thread, sidecar server): embeddings forwarded
 * to a receiver's sidecar equal a direct onnxruntime run (run.ts) on the same input.
 */
import test from 'ava';
import { SidecarClient } from '../../../sidecar/client/client.js';
import type { Tensor } from '../../../sidecar/tensor.js';
import type { LoadedModel } from '../../../executors/models/loader.js';
import { encodeImage, type Embeddings } from '../../../executors/models/run.js';
import { type EricFixture, TINY_A, TINY_B, dataUrl, maxAbsDiff, receiveEmbedding, type ForwardingEric, startForwardingEric } from '../../helpers/eric.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { makeImage } from '../../helpers/media.js';
import type { SidecarCluster } from '../../helpers/sidecar.js';

let f: ForwardingEric;
let sc: SidecarCluster;
let eric: EricFixture;
let consumer: SidecarClient;
let direct: LoadedModel;

test.before(async () => {
  f = await startForwardingEric({ ranks: [0], consumer: 1, adapterModelIds: [TINY_B] });
  ({ sc, eric, consumer, direct } = f);
});
test.after.always(async () => { await f?.stop(); });

const received = (id: string) => receiveEmbedding(consumer, id);

function assertEqualEmbeddings(t: import('ava').ExecutionContext, got: Tensor, want: Embeddings, tol: number): void {
  t.is(got.dtype, 'f32');
  t.deepEqual(got.shape, want.shape);
  const d = maxAbsDiff(got.data as Float32Array, want.data);
  t.true(d <= tol, `max abs diff ${d}`);
}

test('image embeddings sent to the receiver\'s sidecar equal a direct onnxruntime run', async (t) => {
  const img = await makeImage(140, 112, { seed: 3, format: 'jpeg' });
  const id = `${uniquePrefix()}img`;
  const res = await eric.embed([{ id, modality: 'image', model_id: TINY_A, url: dataUrl('image/jpeg', img), receiver_sidecar_ranks: [[1]] }]);
  t.deepEqual(res, { status: 200, body: { status: 0 } });
  assertEqualEmbeddings(t, await received(id), await encodeImage(direct, img, TINY_A), 1e-5);
});

test('an adapter model id gets its own projector (hidden size and values)', async (t) => {
  const img = await makeImage(56, 84, { seed: 4 });
  const id = `${uniquePrefix()}adapter`;
  const res = await eric.embed([{ id, modality: 'image', model_id: TINY_B, url: dataUrl('image/png', img), receiver_sidecar_ranks: [[1]] }]);
  t.is(res.status, 200);
  const got = await received(id);
  t.is(got.shape[1], 192);
  assertEqualEmbeddings(t, got, await encodeImage(direct, img, TINY_B), 1e-5);
});

test('a batch of N items equals N single direct runs', async (t) => {
  const sizes = [[224, 224], [56, 56], [112, 168], [300, 200]] as const;
  const imgs = await Promise.all(sizes.map(([w, h], i) => makeImage(w, h, { seed: 10 + i, format: 'jpeg' })));
  const p = uniquePrefix();
  const res = await eric.embed(imgs.map((b, i) => ({ id: `${p}b${i}`, modality: 'image', model_id: TINY_A, url: dataUrl('image/jpeg', b), receiver_sidecar_ranks: [[1]] })));
  t.is(res.status, 200);
  for (const [i, b] of imgs.entries()) assertEqualEmbeddings(t, await received(`${p}b${i}`), await encodeImage(direct, b, TINY_A), 1e-5);
  const metrics = await (await fetch(`${eric.url}/metrics`)).text();
  t.regex(metrics, /eric_batch_size_bucket\{le="4",modality="image"\} [1-9]/, 'the four items ran as one batch');
});

test('an item without receivers is encoded and nothing is sent', async (t) => {
  const img = await makeImage(56, 56, { seed: 5 });
  const res = await eric.embed([{ id: `${uniquePrefix()}none`, modality: 'image', model_id: TINY_A, url: dataUrl('image/png', img), receiver_sidecar_ranks: null }]);
  t.deepEqual(res, { status: 200, body: { status: 0 } });
});

test('GET /info and /modalities describe what this Eric serves', async (t) => {
  const info = await eric.info();
  t.like(info, { kind: 'eric', modelId: TINY_A, adapterModelIds: [TINY_B], modality: 'image', tpSize: 1, sidecarRanks: [0] });
  t.deepEqual(await (await fetch(`${eric.url}/modalities`)).json(), ['image', 'video']);
});

// Serial: it reads the node-wide bytes in use.
test.serial('a failed request leaves no sidecar memory behind and its consumers stop waiting', async (t) => {
  const good = await makeImage(224, 224, { seed: 6, format: 'jpeg' });
  const p = uniquePrefix();
  const res = await eric.embed([
    { id: `${p}good`, modality: 'image', model_id: TINY_A, url: dataUrl('image/jpeg', good), receiver_sidecar_ranks: [[1]] },
    { id: `${p}bad`, modality: 'image', model_id: TINY_A, url: dataUrl('image/jpeg', good.subarray(0, 200)), receiver_sidecar_ranks: [[1]] },
  ]);
  t.is(res.status, 422);
  t.is(res.body.error.code, 'MODEL_INPUT_CORRUPT');
  t.deepEqual(res.body.error.details.items.map((i: { id: string; ok: boolean }) => [i.id, i.ok]), [[`${p}good`, true], [`${p}bad`, false]]);
  for (const id of [`${p}good`, `${p}bad`]) {
    const err = await t.throwsAsync(consumer.recv(id, 0, { timeoutMs: 10_000 }));
    t.is((err as { code?: string }).code, 'SIDECAR_PRODUCER_FAILED');
  }
  t.is((await sc.nodeOf(0).health()).bytesInUse, 0);
});

