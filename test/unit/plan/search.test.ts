/** The planner's pure search: screen, infeasibility, and the fine step against exhaustive search. */
import test from 'ava';
import type { Demand } from '../../../plan/demand.js';
import { InfeasiblePlanError, screen, searchPlan, splits, type TpVariant } from '../../../plan/search.js';
import { TP_FACTORS } from '../../../sim/latency/tensor-parallel.js';

const floors = (ttftMs: number): Demand['floors'] => [{ kind: 'image', weight: 1, ttftMs, tpotMs: 20, e2elMs: ttftMs + 500, ttftStage: 'llm:m', tpotStage: 'llm:m', e2elStage: 'llm:m' }];
const toy: Demand = {
  stages: [
    { label: 'encoder:image', stage: 'encoder', devicesPerExecutor: 1, workMs: 10, hostLabel: 'llm:m' },
    { label: 'llm:m', stage: 'llm', devicesPerExecutor: 1, workMs: 35 },
  ],
  floors: floors(100),
};
const rateOf = async (c: { screenRateRps: number }) => c.screenRateRps;

test('the planner finds the known optimum of a toy split instance (2 encoders + 6 LLMs on 8 devices)', async (t) => {
  // Split plans only: with an evaluator that is the screen itself, work-conserving monolithic always ties or
  // wins (interference shows only in simulation).
  const r = await searchPlan({ demand: toy, devices: 8, fineCandidates: 1, monolithic: false, colocate: false }, rateOf);
  t.deepEqual(r.best.replicas, { 'encoder:image': 2, 'llm:m': 6 });
  t.is(r.best.mode, 'split');
  // Exhaustive: every e + l ≤ 8.
  let best = 0;
  for (let e = 1; e < 8; e++) for (let l = 1; e + l <= 8; l++) best = Math.max(best, Math.min((e * 1000) / 10, (l * 1000) / 35));
  t.is(r.best.goodputRps, best);
  t.is(Math.round(best), 171);
  t.deepEqual(Object.keys(r.headroom).sort(), ['encoder:image', 'llm:m']);
  t.is(r.best.bottleneck, 'llm:m');
});

test('the monolithic candidate folds encoder work into its host LLM', (t) => {
  const s = screen(toy.stages, { mode: 'monolithic', replicas: { 'encoder:image': 0, 'llm:m': 8 } });
  t.is(s.screenRateRps, 8000 / 45);
  t.deepEqual(Object.keys(s.capacityRps), ['llm:m']);
});

test('splits are maximal: no label could take another executor', (t) => {
  const all = splits(toy.stages, 5);
  t.is(all.length, 4);
  for (const r of all) t.is(r['encoder:image']! + r['llm:m']!, 5);
});

test('the fine step picks the best evaluated candidate, not the best screened one', async (t) => {
  // An evaluator that penalises the screen's favourite (as interference in a simulation can).
  const r = await searchPlan({ demand: toy, devices: 8, fineCandidates: 3, monolithic: false, colocate: false }, async (c) => (c.replicas['encoder:image'] === 2 ? 100 : c.screenRateRps));
  t.not(r.best.replicas['encoder:image'], 2);
  t.true(r.best.goodputRps > 100);
});

test('an SLO no request can meet on an idle system is rejected, naming the stage', async (t) => {
  const e = await t.throwsAsync(searchPlan({ demand: { ...toy, floors: floors(900) }, devices: 8, slo: { ttft_ms: 500 } }, rateOf), { instanceOf: InfeasiblePlanError });
  t.is(e!.stage, 'llm:m');
  t.regex(e!.message, /ttft_ms=500 cannot be met.*llm:m/);
});

test('a device budget below one executor per stage is rejected', async (t) => {
  const threeStages: Demand = { ...toy, stages: [...toy.stages, { label: 'generator:audio', stage: 'generator', devicesPerExecutor: 2, workMs: 5 }] };
  const e = await t.throwsAsync(searchPlan({ demand: threeStages, devices: 2 }, rateOf), { instanceOf: InfeasiblePlanError });
  t.regex(e!.message, /^budget: 2 devices cannot hold/);
});

test('a required rate above every plan’s capacity is rejected, naming the bottleneck stage', async (t) => {
  const e = await t.throwsAsync(searchPlan({ demand: toy, devices: 4, minRateRps: 500 }, rateOf), { instanceOf: InfeasiblePlanError });
  t.is(e!.stage, 'llm:m');
});

test('a rarely used encoder is kept inside its host instead of taking a device of its own', async (t) => {
  const withAudio: Demand = { ...toy, stages: [...toy.stages, { label: 'encoder:audio', stage: 'encoder', devicesPerExecutor: 1, workMs: 0.5, hostLabel: 'llm:m' }] };
  const r = await searchPlan({ demand: withAudio, devices: 9, fineCandidates: 1, monolithic: false }, rateOf);
  t.is(r.best.replicas['encoder:audio'], 0);
  const fullySplit = await searchPlan({ demand: withAudio, devices: 9, fineCandidates: 1, monolithic: false, colocate: false }, rateOf);
  t.is(fullySplit.best.replicas['encoder:audio'], 1);
  t.true(r.best.goodputRps > fullySplit.best.goodputRps);
});

test('tensor parallelism: when TP1 misses the SLO the planner finds the known TP-2 optimum of a toy instance', async (t) => {
  // Latency and work at TP k from the same factors the simulator uses (sim/latency/tensor-parallel.ts).
  const at = (k: number): TpVariant => {
    const f = TP_FACTORS.large[k]!;
    return {
      devicesPerExecutor: { 'encoder:image': 1, 'llm:m': k },
      demand: { stages: [toy.stages[0]!, { label: 'llm:m', stage: 'llm', devicesPerExecutor: k, workMs: 35 * f * k }], floors: floors(900 * f) },
    };
  };
  const input = { demand: { ...toy, floors: floors(900) }, devices: 8, slo: { ttft_ms: 600 }, fineCandidates: 1, monolithic: false, colocate: false };
  // TP1 alone cannot meet TTFT 600 ms (900 ms on an idle system).
  await t.throwsAsync(searchPlan(input, rateOf), { instanceOf: InfeasiblePlanError });
  const r = await searchPlan({ ...input, variants: [at(2), at(4)] }, rateOf);
  // Exhaustive over the feasible degrees (TP2: 514.8 ms, TP4: 326.7 ms idle TTFT): e encoders + l LLM executors of k devices.
  let best = { rate: 0, k: 0, e: 0, l: 0 };
  for (const k of [2, 4]) {
    for (let e = 1; e < 8; e++) for (let l = 1; e + k * l <= 8; l++) {
      const rate = Math.min((e * 1000) / 10, (l * k * 1000) / (35 * TP_FACTORS.large[k]! * k)); // l·k devices, 35·f·k device-ms each
      if (rate > best.rate) best = { rate, k, e, l };
    }
  }
  t.is(best.k, 2);
  t.is(r.best.goodputRps, best.rate);
  t.is(r.best.devicesPerExecutor?.['llm:m'], 2);
  t.is(r.best.replicas['llm:m'], best.l);
});
