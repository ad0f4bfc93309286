/**
 * The live cross-check's direction verdict (p99Agreement) and its simulator half (no live platform): the
 * simulator runs the same scenario for both systems with the executor counts the live platform is given.
 */
import test from 'ava';
import { DEFAULT_CROSSCHECK, liveCrosscheck, p99Agreement, type CrosscheckResult, type Point } from '../../../experiment/live-crosscheck.js';

const pt = (rate: number, p99: number): Point => ({ rate, completed: 10, failed: 0, attainment: 1, p99_e2el_ms: p99, throughput: rate });
const result = (live: [number, number][], sim: [number, number][]): CrosscheckResult => ({
  conditions: {}, replicas: { monolithic: {}, disaggregated: {} }, live_executors: null,
  live: { monolithic: live.map(([m], i) => pt(i + 1, m)), disaggregated: live.map(([, d], i) => pt(i + 1, d)) },
  simulated: { monolithic: sim.map(([m], i) => pt(i + 1, m)), disaggregated: sim.map(([, d], i) => pt(i + 1, d)) },
});

test('p99Agreement compares only rates where live and simulated both differ by the factor, and says whether they agree', (t) => {
  const a = p99Agreement(result([[100, 300], [100, 40], [100, 120]], [[100, 200], [100, 200], [100, 300]]));
  t.deepEqual(a.map((x) => [x.compared, x.agrees]), [[true, true], [true, false], [false, null]]);
  t.is(a[0]!.live_ratio, 3);
  t.is(a[1]!.simulated_ratio, 2);
});

test('the simulator half runs both systems at every rate with the same request count', async (t) => {
  const r = await liveCrosscheck({ ...DEFAULT_CROSSCHECK, rates: [2, 8], numRequests: 20, simOnly: true }, { out: () => {}, err: () => {} });
  t.is(r.live, null);
  for (const s of ['monolithic', 'disaggregated'] as const) t.deepEqual(r.simulated[s].map((p) => [p.rate, p.completed]), [[2, 20], [8, 20]]);
  t.notDeepEqual(r.simulated.monolithic.map((p) => p.p99_e2el_ms), r.simulated.disaggregated.map((p) => p.p99_e2el_ms));
});
