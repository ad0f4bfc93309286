import test from 'ava';
import { compileEricOptions } from '../../../../executors/eric/options.js';

const base = { modelId: 'm', modality: 'image' as const };

test('the TP degree defaults to the number of sidecar ranks, which are sorted', (t) => {
  const o = compileEricOptions({ ...base, ranks: [5, 4] });
  t.is(o.tpSize, 2);
  t.deepEqual(o.ranks, [4, 5]);
});

test('a TP degree that differs from the number of ranks is refused', (t) => {
  t.throws(() => compileEricOptions({ ...base, ranks: [0], tpSize: 2 }), { message: /--tp-size 2 must equal/ });
});

test('the served model ids are the base id, then the adapters, without duplicates', (t) => {
  t.deepEqual(compileEricOptions({ ...base, adapterModelIds: ['a', 'm', 'b'] }).modelIds, ['m', 'a', 'b']);
});

test('an unknown modality is refused naming the field', (t) => {
  t.throws(() => compileEricOptions({ ...base, modality: 'smell' as never }), { message: /modality/ });
});
