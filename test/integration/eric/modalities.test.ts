/** Audio and video Erics: forwarded embeddings equal the direct runners (encodeAudio, encodeVideo). */
import test from 'ava';
import type { SidecarClient } from '../../../sidecar/client/client.js';
import { loadModel } from '../../../executors/models/loader.js';
import { encodeAudio, encodeVideo, type Embeddings } from '../../../executors/models/run.js';
import { encodeWav } from '../../../executors/models/preprocess/wav.js';
import { type EricFixture, TINY_A, dataUrl, maxAbsDiff, receiveEmbedding, startEric } from '../../helpers/eric.js';
import { uniquePrefix } from '../../helpers/ids.js';
import { makeImage, tone } from '../../helpers/media.js';
import { modelDir } from '../../helpers/models.js';
import { type SidecarCluster, startSidecars } from '../../helpers/sidecar.js';

let sc: SidecarCluster;
let consumer: SidecarClient;
const erics: EricFixture[] = [];

test.before(async () => {
  sc = await startSidecars({ nodes: [[0, 1, 2]] });
  consumer = await sc.client(2);
});
test.after.always(async () => {
  await Promise.all(erics.map((e) => e.stop()));
  await sc?.stop();
});

async function expectEqual(t: import('ava').ExecutionContext, id: string, want: Embeddings): Promise<void> {
  const got = await receiveEmbedding(consumer, id);
  t.deepEqual(got.shape, want.shape);
  const d = maxAbsDiff(got.data as Float32Array, want.data);
  t.true(d <= 1e-5, `max abs diff ${d}`);
}

test('audio: a WAV clip\'s embeddings equal encodeAudio', async (t) => {
  const eric = await startEric({ modality: 'audio', ranks: [0], sidecarSocket: sc.nodeOf(0).socketPath });
  erics.push(eric);
  const wav = encodeWav([tone(440, 1.5, 22050), tone(660, 1.5, 22050)], 22050);
  const id = `${uniquePrefix()}wav`;
  t.deepEqual(await eric.embed([{ id, modality: 'audio', model_id: TINY_A, url: dataUrl('audio/wav', wav), receiver_sidecar_ranks: [[2]] }]), { status: 200, body: { status: 0 } });
  const direct = await loadModel(await modelDir('tiny-audio'), { sessionOptions: { intraOpNumThreads: 1 } });
  t.teardown(() => direct.close());
  await expectEqual(t, id, await encodeAudio(direct, wav, TINY_A));
  const bad = await eric.embed([{ id: `${id}-bad`, modality: 'audio', model_id: TINY_A, url: dataUrl('audio/wav', wav.subarray(0, 30)), receiver_sidecar_ranks: [[2]] }]);
  t.is(bad.status, 422);
});

test('video: frames given as a data: URL list equal encodeVideo', async (t) => {
  const eric = await startEric({ modality: 'video', ranks: [1], sidecarSocket: sc.nodeOf(1).socketPath });
  erics.push(eric);
  const frames = await Promise.all([0, 1, 2].map((s) => makeImage(112, 84, { seed: 50 + s, format: 'jpeg' })));
  const id = `${uniquePrefix()}vid`;
  const url = `data:video/jpeg;base64,${frames.map((f) => f.toString('base64')).join(',')}`;
  t.is((await eric.embed([{ id, modality: 'video', model_id: TINY_A, url, receiver_sidecar_ranks: [[2]] }])).status, 200);
  const direct = await loadModel(await modelDir('tiny-vision'), { sessionOptions: { intraOpNumThreads: 1 } });
  t.teardown(() => direct.close());
  await expectEqual(t, id, await encodeVideo(direct, frames, TINY_A));
});
