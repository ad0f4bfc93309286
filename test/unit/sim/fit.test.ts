import test from 'ava';
import { fitDecode, fitPrefill, fitUnits } from '../../../sim/latency/fit.js';
import { RandomSource } from '../../../bench/workload/random.js';

const close = (t: any, got: number, want: number, rel: number, what: string) => t.true(Math.abs(got - want) <= Math.abs(want) * rel, `${what}: fitted ${got}, true ${want}`);

test('the prefill fit recovers a + b·Σtokens + c·Σtokens² from noisy samples', (t) => {
  const rng = new RandomSource(1);
  const truth = { a: 18.1, b: 0.102, c: 7.1e-6 };
  const samples = Array.from({ length: 300 }, () => {
    const tokens = Array.from({ length: rng.int(1, 8) }, () => rng.int(16, 2048));
    const s = tokens.reduce((x, y) => x + y, 0);
    const q = tokens.reduce((x, y) => x + y * y, 0);
    return { tokens, ms: truth.a + truth.b * s + truth.c * q + rng.normal() * 0.05 };
  });
  const f = fitPrefill(samples);
  close(t, f.a, truth.a, 0.02, 'a');
  close(t, f.b, truth.b, 0.02, 'b');
  close(t, f.c, truth.c, 0.05, 'c');
});

test('the decode fit recovers a + b·Σcontext + c·batch', (t) => {
  const rng = new RandomSource(2);
  const truth = { a: 19.9, b: 0.00063, c: 0.0385 };
  const samples = Array.from({ length: 300 }, () => {
    const contexts = Array.from({ length: rng.int(1, 128) }, () => rng.int(16, 4096));
    return { contexts, ms: truth.a + truth.b * contexts.reduce((x, y) => x + y, 0) + truth.c * contexts.length + rng.normal() * 0.01 };
  });
  const f = fitDecode(samples);
  close(t, f.a, truth.a, 0.01, 'a');
  close(t, f.b, truth.b, 0.05, 'b');
  close(t, f.c, truth.c, 0.1, 'c');
});

test('the unit fit recovers an encoder line (intercept comes back last from the library, first from us)', (t) => {
  const samples = [1, 2, 4, 8, 16, 32].map((u) => ({ units: u * 256, ms: 4 + 0.02 * u * 256 }));
  const f = fitUnits(samples);
  close(t, f.a, 4, 1e-6, 'a');
  close(t, f.b, 0.02, 1e-6, 'b');
});
