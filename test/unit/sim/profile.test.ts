/** `cornserve profile` in virtual time (sim/profile.ts): closed-loop sweeps of one simulated executor per task. */
import test from 'ava';
import { scenarios } from '../../../experiment/disaggregation.js';
import { parseScenario } from '../../../sim/scenario/schema.js';
import { policyFromProfile, profileTasks } from '../../../sim/profile.js';
import { sweepStopped } from '../../../policies/frontier.js';

const anyToAny = () => parseScenario(scenarios(true).find((s) => s.name === 'any-to-any/poisson')!.raw);

test('a batching LLM gains throughput with concurrency until the live stop rule ends its sweep; an encoder barely does', async (t) => {
  const profiles = await profileTasks(await anyToAny());
  const llm = Object.entries(profiles).find(([l]) => l.startsWith('llm:'))![1];
  const enc = Object.entries(profiles).find(([l]) => l.startsWith('encoder:'))![1];
  const tp = llm.points.map((p) => p.throughputRps);
  t.true(tp[3]! > 3 * tp[0]!, `LLM throughput at 8 in flight ${tp[3]} vs 1: ${tp[0]} req/s`);
  t.deepEqual(llm.points.map((p) => p.concurrency), llm.points.map((_, i) => 2 ** i));
  t.true(sweepStopped(tp) || llm.points.at(-1)!.concurrency === 256, 'the sweep ran until throughput stopped rising (or the live maximum)');
  t.true(llm.points.every((p) => p.p99Ms >= p.p50Ms && p.p50Ms > 0));
  const policy = policyFromProfile(llm, 1, 8);
  t.true('target' in policy && policy.target >= 16, JSON.stringify(policy));
  const e = enc.points.map((p) => p.throughputRps);
  t.true(Math.max(...e) < 1.2 * e[0]!, `encoder throughput ${e.join(', ')} req/s`);
  t.is(enc.deviceKind, 'a100-80g');
});

test('profiling is deterministic and limited to the labels asked for', async (t) => {
  const sc = await anyToAny();
  const a = await profileTasks(sc, ['encoder:image']);
  t.deepEqual(Object.keys(a), ['encoder:image']);
  t.deepEqual(await profileTasks(sc, ['encoder:image']), a);
});
