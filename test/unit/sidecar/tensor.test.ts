import test from 'ava';
import { bf16ToFloat, convertTensor, floatToBf16, floatToHalf, halfToFloat, tensor } from '../../../sidecar/tensor.js';
import { SidecarError } from '../../../sidecar/errors.js';

test('bf16 round-trips values it can represent exactly', (t) => {
  for (const x of [0, 1, -2, 0.5, 3.140625, 65536, -1.0234375]) t.is(bf16ToFloat(floatToBf16(x)), x);
});

test('bf16 rounds to the nearest representable value', (t) => {
  t.is(bf16ToFloat(floatToBf16(-1.024)), -1.0234375);
});

test('f16 round-trips normal, subnormal and infinite values', (t) => {
  for (const x of [0, 1, -1.5, 65504, 2 ** -24, 2 ** -14, 0.333251953125]) t.is(halfToFloat(floatToHalf(x)), x);
  t.is(halfToFloat(floatToHalf(1e6)), Infinity);
});

test('converts i64 to bf16 and back', (t) => {
  const src = tensor('i64', [2, 2], BigInt64Array.from([1n, -2n, 300n, 4096n]));
  const back = convertTensor(convertTensor(src, 'bf16'), 'i64');
  t.deepEqual([...back.data as BigInt64Array], [1n, -2n, 300n, 4096n]);
  t.deepEqual(back.shape, [2, 2]);
});

test('converts f32 to f64 exactly', (t) => {
  const src = tensor('f32', [3], Float32Array.from([0.1, -2.5, 7]));
  const out = convertTensor(src, 'f64');
  t.true(out.data instanceof Float64Array);
  t.deepEqual([...out.data as Float64Array], [...src.data as Float32Array]);
});

test('rejects data whose length does not match the shape', (t) => {
  const err = t.throws(() => tensor('f32', [2, 3], new Float32Array(5)));
  t.true(err instanceof SidecarError);
  t.is((err as SidecarError).code, 'SIDECAR_BAD_REQUEST');
});

test('rejects a typed array of the wrong kind for the dtype', (t) => {
  t.throws(() => tensor('i64', [2], new Float64Array(2) as never), { message: /BigInt64Array/ });
});
