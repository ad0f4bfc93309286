import test from 'ava';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeImage } from '../../../helpers/media.js';
import { GraphBuilder } from '../../../../executors/models/onnx/graph-builder.js';
import { ParamStore } from '../../../../executors/models/onnx/layers.js';
import { findModel } from '../../../../executors/models/catalog.js';
import { loadModel } from '../../../../executors/models/loader.js';
import { encodeImage } from '../../../../executors/models/run.js';

let root: string;

/** A CLIP-like tower as an exporter would write it (pixel_values → last_hidden_state), plus a hand-written manifest. */
test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'cs-external-'));
  const dir = join(root, 'clip-tiny');
  await mkdir(dir);
  const g = new GraphBuilder('clip-tiny');
  const p = new ParamStore(9);
  const x = g.input('pixel_values', 'FLOAT', ['batch', 3, 32, 32]);
  const w = g.initializer('patch.weight', p.get('patch.weight', [16, 3 * 16 * 16], 'matrix'), [16, 3, 16, 16]);
  const b = g.initializer('patch.bias', p.get('patch.bias', [16], 'bias'), [16]);
  const y = g.transpose(g.reshape(g.conv(x, w, b, { strides: [16, 16] }), [0, 16, 4]), [0, 2, 1]);
  g.output(y, 'last_hidden_state', 'FLOAT', ['batch', 4, 16]);
  await writeFile(join(dir, 'model.onnx'), g.toBytes());
  await writeFile(join(dir, 'manifest.json'), JSON.stringify({
    schema_version: 1,
    name: 'clip-tiny',
    family: 'vision-encoder',
    modalities: ['image'],
    dtype: 'float32',
    graphs: {
      encoder: {
        file: 'model.onnx',
        inputs: [{ name: 'pixel_values', dtype: 'float32', shape: ['batch', 3, 32, 32] }],
        outputs: [{ name: 'last_hidden_state', dtype: 'float32', shape: ['batch', 4, 16] }],
      },
    },
    model_ids: { 'someone/clip-tiny': { hidden_size: 16 } },
    preprocessing: {
      image: { layout: 'nchw', patch_size: 16, image_size: { height: 32, width: 32 }, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5] },
    },
  }));
});
test.after.always(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

test('a hand-written manifest for an exported nchw vision tower is found, loaded and run', async (t) => {
  const hit = await findModel('someone/clip-tiny', 'image', root);
  const model = await loadModel(hit.dir);
  const e = await encodeImage(model, await makeImage(100, 60), 'someone/clip-tiny');
  t.deepEqual(e.shape, [4, 16]);
  t.true(e.data.every(Number.isFinite));
  await model.close();
});
