import test from 'ava';
import { toPcm16 } from '../../../../lib/geri-protocol.js';

/** The definition toPcm16 must keep bit for bit: clamp to [-1, 1], scale by 32767, Math.round. */
const reference = (samples: Float32Array) => Int16Array.from(samples, (x) => Math.round(Math.min(1, Math.max(-1, x)) * 32767));

test('toPcm16 gives the clamped, scaled, Math.round-ed samples bit for bit, edge values included', (t) => {
  const edges = [0, -0, 1, -1, 1.5, -1.5, Infinity, -Infinity, NaN, 0.5 / 32767, -0.5 / 32767, 1.5 / 32767, -1.5 / 32767, -2.5 / 32767, 2.5 / 32767, 0.99999, -0.99999];
  const wave = Array.from({ length: 4096 }, (_, i) => Math.sin(i / 3.7) * 1.3);
  const samples = Float32Array.from([...edges, ...wave]);
  const pcm = toPcm16(samples);
  t.is(pcm.byteLength, samples.length * 2);
  t.deepEqual(new Int16Array(pcm.buffer, pcm.byteOffset, samples.length), reference(samples));
});
