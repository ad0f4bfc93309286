/**
 * Eric serving a model folder a user brought: a fixed-size (nchw, CLIP/SigLIP-style) vision tower with a
 * hand-written manifest and a per-model-id projector, written the way an exporter would.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { GraphBuilder } from '../../../executors/models/onnx/graph-builder.js';
import { ParamStore } from '../../../executors/models/onnx/layers.js';
import { loadModel } from '../../../executors/models/loader.js';
import { encodeImage } from '../../../executors/models/run.js';
import { dataUrl, maxAbsDiff, receiveEmbedding, startEric } from '../../helpers/eric.js';
import { makeImage } from '../../helpers/media.js';
import { startSidecars } from '../../helpers/sidecar.js';

const ID = 'someone/siglip-mini';

/** pixel_values [1,3,48,48] → 12x12 patch conv (9 tokens of 24) → last_hidden_state; projector 24 → 40. */
async function writeTower(dir: string): Promise<void> {
  const p = new ParamStore(21);
  const g = new GraphBuilder('siglip-mini');
  const x = g.input('pixel_values', 'FLOAT', [1, 3, 48, 48]);
  const w = g.initializer('embed.weight', p.get('embed.weight', [24, 3 * 12 * 12], 'matrix'), [24, 3, 12, 12]);
  const b = g.initializer('embed.bias', p.get('embed.bias', [24], 'bias'), [24]);
  const tokens = g.transpose(g.reshape(g.conv(x, w, b, { strides: [12, 12] }), [1, 24, 16]), [0, 2, 1]);
  g.output(g.tanh(tokens), 'last_hidden_state', 'FLOAT', [1, 16, 24]);
  await writeFile(join(dir, 'tower.onnx'), g.toBytes());
  const pg = new GraphBuilder('projector');
  const f = pg.input('features', 'FLOAT', ['tokens', 24]);
  const pw = pg.initializer('proj.weight', p.get('proj.weight', [24, 40], 'matrix'), [24, 40]);
  pg.output(pg.matmul(f, pw), 'embeddings', 'FLOAT', ['tokens', 40]);
  await writeFile(join(dir, 'projector.onnx'), pg.toBytes());
  await writeFile(join(dir, 'manifest.json'), JSON.stringify({
    schema_version: 1, name: 'siglip-mini', family: 'vision-encoder', modalities: ['image'], dtype: 'float32',
    graphs: {
      encoder: {
        file: 'tower.onnx',
        inputs: [{ name: 'pixel_values', dtype: 'float32', shape: [1, 3, 48, 48] }],
        outputs: [{ name: 'last_hidden_state', dtype: 'float32', shape: [1, 16, 24] }],
      },
    },
    model_ids: {
      [ID]: {
        hidden_size: 40,
        graphs: { projector: { file: 'projector.onnx', inputs: [{ name: 'features', dtype: 'float32', shape: ['tokens', 24] }], outputs: [{ name: 'embeddings', dtype: 'float32', shape: ['tokens', 40] }] } },
      },
    },
    preprocessing: { image: { layout: 'nchw', patch_size: 12, image_size: { height: 48, width: 48 }, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] } },
  }));
}

test('an exported nchw tower with a projector is served, and its embeddings equal a direct run', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'eric-external-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await mkdir(join(root, 'siglip-mini'));
  await writeTower(join(root, 'siglip-mini'));
  const sc = await startSidecars({ nodes: [[0, 1]] });
  t.teardown(() => sc.stop());
  const eric = await startEric({ modality: 'image', modelId: ID, modelsDir: root, ranks: [0], sidecarSocket: sc.nodeOf(0).socketPath });
  t.teardown(() => eric.stop());
  const img = await makeImage(90, 60, { seed: 8, format: 'jpeg' });
  t.is((await eric.embed([{ id: 'abc1', modality: 'image', model_id: ID, url: dataUrl('image/jpeg', img), receiver_sidecar_ranks: [[1]] }])).status, 200);
  const got = await receiveEmbedding(await sc.client(1), 'abc1');
  const direct = await loadModel(join(root, 'siglip-mini'));
  t.teardown(() => direct.close());
  const want = await encodeImage(direct, img, ID);
  t.deepEqual(got.shape, [16, 40]);
  t.deepEqual(want.shape, [16, 40]);
  t.true(maxAbsDiff(got.data as Float32Array, want.data) <= 1e-5);
});
