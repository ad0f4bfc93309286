/** The planner's pure search: screen, infeasibility, and the fine step against exhaustive search. */
import test from 'ava';
import type { Demand } from '../../../plan/demand.js';
import { InfeasiblePlanError, screen, searchPlan, splits } from '../../../plan/search.js';

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
