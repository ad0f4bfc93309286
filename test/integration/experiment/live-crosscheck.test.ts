/**
 * The disaggregation experiment's live cross-check, CI-sized: monolithic (4 LLM executors with the encoder inside)
 * and disaggregated (1 Eric + 3 LLM) each on a real `cornserve up --devices 4`, the same seeded workload through
 * the bench client at two rates, and the simulator (preset local-cpu) on the same scenario.
 * What is asserted is what holds on a shared 2-core machine: every request completes in both live systems, the
 * platform ran the executor counts the simulator was given, and the table has live and simulated rows at each rate.
 * The direction (which system has the lower p99 E2EL) is NOT asserted: the simulator now runs the local executors
 * and hops on the node's shared cores, and the 40-request runs agreed with it (docs/experiment.md), but the live ratios
 * move between runs with the machine's other load by more than that (e.g. one CI-sized run before shared cores: at
 * 6 req/s live split ÷ monolithic 0.57, simulated 1.56; one loaded 40-request run: live 16.9 at 8 req/s).
 */
import test from 'ava';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CROSSCHECK, crosscheckTable, liveCrosscheck, type CrosscheckResult } from '../../../experiment/live-crosscheck.js';

const RATES = [2, 6];
const N = 10;
let dir: string;
let r: CrosscheckResult;
const log: string[] = [];

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'live-crosscheck-'));
  r = await liveCrosscheck({ ...DEFAULT_CROSSCHECK, rates: RATES, numRequests: N, resultDir: dir }, { out: (l) => log.push(l), err: (l) => log.push(l) });
});
test.after.always(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('every request of the same seeded workload completes on both live systems at every rate', (t) => {
  t.truthy(r.live, log.join('\n'));
  for (const system of ['monolithic', 'disaggregated'] as const) {
    t.deepEqual(r.live![system].map((p) => p.rate), RATES);
    for (const p of r.live![system]) t.deepEqual([p.completed, p.failed], [N, 0], `${system} at ${p.rate} req/s`);
  }
});

test('the live platform runs the executor counts the simulator is given (4 with the encoder inside vs 1 Eric + 3 LLM)', (t) => {
  t.deepEqual(r.replicas.monolithic, { 'encoder:image': 0, 'llm:cornserve/tiny-vlm-a': 4 });
  t.deepEqual(r.replicas.disaggregated, { 'encoder:image': 1, 'llm:cornserve/tiny-vlm-a': 3 });
  t.deepEqual(r.live_executors!.monolithic, { LLMBaseTask: 4 });
  t.deepEqual(r.live_executors!.disaggregated, { EncoderTask: 1, LLMBaseTask: 3 });
});

test('the table has a live and a simulated row at each rate, with both systems measured', (t) => {
  const rows = crosscheckTable(r).split('\n').slice(2);
  t.deepEqual(rows.map((l) => l.split('|').slice(1, 3).map((c) => c.trim()).join(' ')), RATES.flatMap((x) => [`${x} live`, `${x} simulated`]));
  for (const s of [r.simulated, r.live!]) for (const p of [...s.monolithic, ...s.disaggregated]) t.true(p.p99_e2el_ms! > 0);
});
