import test from 'ava';
import ort from 'onnxruntime-node';
import { GraphBuilder } from '../../../../../executors/models/onnx/graph-builder.js';
import { ParamStore, attention, linear } from '../../../../../executors/models/onnx/layers.js';

function tinyAttentionModel(seed: number): Uint8Array {
  const g = new GraphBuilder('tiny');
  const p = new ParamStore(seed);
  const x = g.input('x', 'FLOAT', ['n', 8]);
  g.output(attention(g, p, x, undefined, 'attn', { dim: 8, heads: 2 }), 'y', 'FLOAT', ['n', 8]);
  return g.toBytes();
}

test('same seed gives byte-identical model bytes', (t) => {
  t.deepEqual(Buffer.from(tinyAttentionModel(7)), Buffer.from(tinyAttentionModel(7)));
});

test('a different seed gives different weights', (t) => {
  t.notDeepEqual(Buffer.from(tinyAttentionModel(7)), Buffer.from(tinyAttentionModel(8)));
});

test('parameters do not depend on the order they are requested in', (t) => {
  const a = new ParamStore(3);
  const b = new ParamStore(3);
  const a1 = a.get('l1.weight', [4, 4], 'matrix');
  b.get('l2.weight', [4, 4], 'matrix');
  t.deepEqual(b.get('l1.weight', [4, 4], 'matrix'), a1);
});

test('a linear layer run by onnxruntime matches a JS reference', async (t) => {
  const g = new GraphBuilder('lin');
  const p = new ParamStore(1);
  const x = g.input('x', 'FLOAT', ['n', 3]);
  g.output(linear(g, p, x, 'fc', 3, 2), 'y', 'FLOAT', ['n', 2]);
  const session = await ort.InferenceSession.create(g.toBytes());
  const input = Float32Array.from([1, -2, 0.5, 0.25, 3, -1]);
  const out = await session.run({ x: new ort.Tensor('float32', input, [2, 3]) });
  const w = p.get('fc.weight', [3, 2], 'matrix');
  const b = p.get('fc.bias', [2], 'bias');
  const y = out.y!.data as Float32Array;
  for (let r = 0; r < 2; r++) {
    for (let c = 0; c < 2; c++) {
      let s = b[c]!;
      for (let k = 0; k < 3; k++) s += input[r * 3 + k]! * w[k * 2 + c]!;
      t.true(Math.abs(y[r * 2 + c]! - s) < 1e-5);
    }
  }
  await session.release();
});

test('a value name used twice is rejected', (t) => {
  const g = new GraphBuilder('dup');
  g.input('x', 'FLOAT', [1]);
  t.throws(() => g.input('x', 'FLOAT', [1]), { message: /used twice/ });
});

test('runtime sizes drive Resize output shape', async (t) => {
  const g = new GraphBuilder('resize');
  const x = g.input('x', 'FLOAT', [1, 1, 2, 2]);
  const sizes = g.input('sizes', 'INT64', [4]);
  g.output(g.resize(x, sizes), 'y', 'FLOAT', [1, 1, 'h', 'w']);
  const session = await ort.InferenceSession.create(g.toBytes());
  const out = await session.run({
    x: new ort.Tensor('float32', Float32Array.from([0, 1, 2, 3]), [1, 1, 2, 2]),
    sizes: new ort.Tensor('int64', BigInt64Array.from([1n, 1n, 5n, 3n]), [4]),
  });
  t.deepEqual(out.y!.dims, [1, 1, 5, 3]);
  await session.release();
});
