/**
 * Eric produces forwarded embeddings in place (real Eric, engine, worker thread, sidecar server): the projector of a
 * forwarded item writes into sidecar shared memory and the send moves it with no copy. What the receiver reads
 * equals a direct run, eric_forwarded_bytes_total{path="in_place"} counts it, and a forward that fails leaves no
 * sidecar memory held. Serial: the byte counters and the node's bytes in use are read before and after each test.
 */
import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';
import { encodeImage } from '../../../executors/models/run.js';
import { TINY_A, dataUrl, forwardedBytes, maxAbsDiff, receiveEmbedding, type ForwardingEric, startForwardingEric } from '../../helpers/eric.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { makeImage } from '../../helpers/media.js';

let f: ForwardingEric;

test.before(async () => {
  f = await startForwardingEric({ ranks: [0], consumer: 1 });
});
test.after.always(async () => { await f?.stop(); });

/** A 448x448 image: [256, 256] f32 embeddings, 256 KiB, past the sidecar's inline size (a large send). */
const large = (seed: number) => makeImage(448, 448, { seed, format: 'jpeg' });
const BYTES = 256 * 256 * 4;
const item = (id: string, img: Uint8Array, receivers: number[][] | null) =>
  ({ id, modality: 'image', model_id: TINY_A, url: dataUrl('image/jpeg', img), receiver_sidecar_ranks: receivers });
const idle = async () => waitUntil('the sidecar holds no memory', async () => (await f.sc.nodeOf(0).health()).bytesInUse === 0);

test.serial('a forwarded embedding is produced in place: the receiver reads a direct run\'s values and it counts as in_place', async (t) => {
  const img = await large(1);
  const before = await forwardedBytes(f.eric);
  const id = `${uniquePrefix()}one`;
  const res = await f.eric.embed([item(id, img, [[1]])]);
  t.deepEqual(res, { status: 200, body: { status: 0 } });
  const got = await receiveEmbedding(f.consumer, id);
  const want = await encodeImage(f.direct, img, TINY_A);
  t.deepEqual(got.shape, [256, 256]);
  t.true(maxAbsDiff(got.data as Float32Array, want.data) <= 1e-5);
  const after = await forwardedBytes(f.eric);
  t.deepEqual({ inPlace: after.inPlace - before.inPlace, copied: after.copied - before.copied }, { inPlace: BYTES, copied: 0 });
  await idle();
});

test.serial('in a batch each forwarded item is its own allocation, and a returned embedding is a copy taken before the send', async (t) => {
  const imgs = await Promise.all([2, 3, 4].map(large));
  const p = uniquePrefix();
  const before = await forwardedBytes(f.eric);
  const res = await fetch(`${f.eric.url}/embeddings`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ return_embeddings: true, data: [item(`${p}a`, imgs[0]!, [[1]]), item(`${p}b`, imgs[1]!, null), item(`${p}c`, imgs[2]!, [[1]])] }),
  });
  t.is(res.status, 200);
  const body = (await res.json()) as { embeddings: { id: string; shape: number[]; data: number[] }[] };
  const wants = await Promise.all(imgs.map((b) => encodeImage(f.direct, b, TINY_A)));
  for (const [i, e] of body.embeddings.entries()) {
    t.deepEqual(e.shape, [256, 256]);
    t.true(maxAbsDiff(e.data, wants[i]!.data) <= 1e-5, `returned ${e.id}`);
  }
  for (const [k, i] of [['a', 0], ['c', 2]] as const) {
    const got = await receiveEmbedding(f.consumer, `${p}${k}`);
    t.true(maxAbsDiff(got.data as Float32Array, wants[i]!.data) <= 1e-5, `forwarded ${k}`);
  }
  const after = await forwardedBytes(f.eric);
  t.deepEqual({ inPlace: after.inPlace - before.inPlace, copied: after.copied - before.copied }, { inPlace: 2 * BYTES, copied: 0 });
  await idle();
});

test.serial('a forward that fails after its embedding was produced in place leaves no sidecar memory held', async (t) => {
  const res = await f.eric.embed([item(`${uniquePrefix()}nowhere`, await large(5), [[99]])]);
  t.true(res.status >= 500, JSON.stringify(res.body));
  t.is(res.body.error.code, 'SIDECAR_UNKNOWN_RANK');
  await t.notThrowsAsync(idle());
  // And the next forward is produced in place as usual.
  const id = `${uniquePrefix()}after`;
  t.is((await f.eric.embed([item(id, await large(6), [[1]])])).status, 200);
  await receiveEmbedding(f.consumer, id);
  await idle();
});
