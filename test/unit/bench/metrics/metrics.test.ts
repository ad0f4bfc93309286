import test from 'ava';
import { readFileSync } from 'node:fs';
import { aggregate, distribution, runDurationS } from '../../../../bench/metrics/aggregate.js';
import { tpotMs, type RequestRecord } from '../../../../bench/metrics/record.js';
import { meetsSlo, parseSlo, sloOutcome } from '../../../../bench/metrics/slo.js';
import { InFlightPeaks, inFlightSteps, thinTimeline } from '../../../../bench/metrics/timeline.js';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/timings.json', import.meta.url), 'utf8')) as { durationS: number; records: RequestRecord[] };
const { records, durationS } = fixture;
/** HDR percentiles are exact to 3 significant digits. */
const near = (a: unknown, b: number) => typeof a === 'number' && Math.abs(a - b) <= Math.abs(b) * 0.001 + 1e-9;

test('TPOT is (E2EL - TTFT) / (output tokens - 1), and undefined for one-token and failed requests', (t) => {
  t.deepEqual(records.map(tpotMs), [100, 200, undefined, undefined]);
});

test('the aggregates of the hand-made timings carry vLLM names and the worked-out values', (t) => {
  const a = aggregate(records, { durationS });
  t.is(a.completed, 3);
  t.is(a.failed, 1);
  t.is(a.total_input_tokens, 60); // successful requests only
  t.is(a.total_output_tokens, 10);
  t.is(a.request_throughput, 1.5);
  t.is(a.output_throughput, 5);
  t.true(near(a.mean_ttft_ms, 350 / 3));
  t.true(near(a.median_ttft_ms, 100));
  t.true(near(a.p99_ttft_ms, 200));
  t.true(near(a.mean_tpot_ms, 150));
  t.true(near(a.p99_tpot_ms, 200));
  // ITL pools every gap: 50 150 100 100 200 200 200
  t.true(near(a.mean_itl_ms, 1000 / 7));
  t.true(near(a.median_itl_ms, 150));
  t.true(near(a.p99_itl_ms, 200));
  t.true(near(a.mean_e2el_ms, 1350 / 3));
  t.true(near(a.p90_e2el_ms, 800));
  t.deepEqual(a.errors_by_code, { deadline_exceeded: 1 });
  t.is(a.request_goodput, null);
});

test('goodput and attainment count the requests that meet every SLO, failed ones never', (t) => {
  const slo = parseSlo('ttft_ms=150,tpot_ms=150');
  t.deepEqual(records.map((r) => meetsSlo(r, slo)), [true, false, true, false]); // #1 misses TTFT, #2 has no TPOT, #3 failed
  t.deepEqual(sloOutcome(records, slo, durationS), { good: 2, attainment: 0.5, goodput: 1 });
  const a = aggregate(records, { durationS, slo });
  t.is(a.request_goodput, 1);
  t.is(a.slo_attainment, 0.5);
  t.deepEqual(sloOutcome(records, parseSlo('e2el_ms=600'), durationS).good, 2);
  t.deepEqual(sloOutcome(records, parseSlo('tpot_ms=250'), durationS).good, 3);
});

test('a malformed SLO is an error naming --slo', (t) => {
  t.deepEqual(parseSlo('ttft_ms=500, e2el_ms=2000'), { ttft_ms: 500, e2el_ms: 2000 });
  for (const bad of ['ttft=5', 'ttft_ms=', 'ttft_ms=-1', 'ttft_ms=abc', 'ttft_ms=1,ttft_ms=2', '', 'tpot_ms=1=2']) t.throws(() => parseSlo(bad), { message: /--slo/ }, bad);
});

test('the run duration spans the first send to the last end, failures included', (t) => {
  t.is(runDurationS(records), 2);
});

test('percentiles come from the histogram within 0.1% of the exact value', (t) => {
  const values = Array.from({ length: 10_000 }, (_, i) => 1 + i * 0.37);
  const d = distribution(values);
  const exact = (q: number) => values[Math.ceil((q / 100) * values.length) - 1]!;
  for (const q of [90, 95, 99]) t.true(Math.abs(d.p[q]! - exact(q)) / exact(q) < 0.001, `p${q} ${d.p[q]} vs ${exact(q)}`);
});

test('in-flight steps rise at each send and fall at each end', (t) => {
  t.deepEqual(inFlightSteps(records).map((s) => s.inFlight), [1, 2, 3, 2, 1, 2, 1, 0]);
});

test('a huge timeline is thinned to a bounded number of points that keep its peak and span', (t) => {
  // 700k requests, one every 5 ms, each 40 ms long (8 in flight), with one burst of 500 at once at 2000 s.
  const steps: Array<{ tS: number; inFlight: number }> = [];
  for (let i = 0; i < 700_000; i++) steps.push({ tS: i * 0.005, inFlight: i === 400_000 ? 500 : 8 });
  const thin = thinTimeline(steps, 1000);
  t.true(thin.length <= 1000, `${thin.length} points`);
  t.true(thin.length >= 500, `${thin.length} points: the buckets still cover the run`);
  t.is(Math.max(...thin.map((p) => p.inFlight)), 500, 'the burst survives as the peak of its bucket');
  t.true(thin.at(-1)!.tS <= 3500 && thin.at(-1)!.tS > 3000, `the last bucket starts near the end (${thin.at(-1)!.tS} s)`);
});

test('a short timeline is plotted as it is', (t) => {
  const steps = [{ tS: 0, inFlight: 0 }, { tS: 1, inFlight: 1 }, { tS: 2, inFlight: 0 }];
  t.deepEqual(thinTimeline(steps, 1000), steps);
});

test('peaks carry the level through buckets without a change', (t) => {
  const p = new InFlightPeaks(4, 1000);
  p.set(500, 3); // bucket 0 (0–1 s)
  p.set(3500, 1); // bucket 3: buckets 1 and 2 held 3 all along
  t.deepEqual(p.points().map((x) => x.inFlight), [3, 3, 3, 3]);
  p.set(4500, 0); // bucket 4 does not fit 4 buckets of 1 s: they merge into 2 s buckets
  t.deepEqual(p.points(), [{ tS: 0, inFlight: 3 }, { tS: 2, inFlight: 3 }, { tS: 4, inFlight: 1 }]);
});
