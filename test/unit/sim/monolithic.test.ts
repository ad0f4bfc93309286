/** The simulator's monolithic mode: encoders run inside the LLM executor that consumes them (encoderFission: false). */
import test from 'ava';
import { parseScenario } from '../../../sim/scenario/schema.js';
import { simulate } from '../../../sim/run.js';

const base = {
  name: 'mono',
  cluster: { nodes: 1, devicesPerNode: 4, device: 'a100-80g' },
  app: { file: 'functions/apps/mllm.ts', api: 'chat' },
  workload: { requestRate: 4, mix: 'text:0.5,image:0.5', inputLen: 100, outputLen: 32, imageSize: '448x448', numRequests: 200, seed: 1 },
  slo: 'ttft_ms=2000',
};

test('a monolithic deployment has no encoder executors and still serves every image request', async (t) => {
  const o = await simulate(await parseScenario({ ...base, deployment: { mode: 'monolithic', replicas: { 'llm:cornserve/tiny-vlm-a': 4 } } }));
  t.deepEqual(o.deployment.map((d) => [d.label, d.executors]).sort(), [['encoder:image', 0], ['llm:cornserve/tiny-vlm-a', 4]]);
  t.deepEqual(o.invariants, { overCapacity: 0, startedBeforeProducers: 0, endedTwice: 0, neverEnded: 0 });
  t.is(o.results.completed, 200);
});

test('in a monolithic deployment an image request’s TTFT includes its encoding on the LLM executor', async (t) => {
  // One request on an idle system: split TTFT = encode + transfer + prefill; monolithic = encode + prefill.
  // Without the inline encode, monolithic would be faster by the whole encode (24 ms here), not just the transfer.
  const one = { ...base.workload, mix: 'image:1', numRequests: 1 };
  const mono = await simulate(await parseScenario({ ...base, workload: one, deployment: { mode: 'monolithic', replicas: { 'llm:cornserve/tiny-vlm-a': 1 } } }));
  const split = await simulate(await parseScenario({ ...base, workload: one, deployment: { replicas: { 'llm:cornserve/tiny-vlm-a': 1, 'encoder:image': 1 } } }));
  const encodeMs = 4.0 + 0.02 * 32 * 32; // the a100-80g preset's encoder on a 448×448 image (32 × 32 patches)
  const gap = split.results.requests[0]!.ttftMs! - mono.results.requests[0]!.ttftMs!;
  t.true(gap >= 0 && gap < encodeMs / 2, `split − monolithic TTFT = ${gap} ms: only the transfer, the encode is on both`);
});

test('an encoder given 0 executors runs inside its consumer while the others keep their own', async (t) => {
  const o = await simulate(await parseScenario({ ...base, workload: { ...base.workload, mix: 'text:0.4,image:0.3,audio:0.3' }, deployment: { replicas: { 'llm:cornserve/tiny-vlm-a': 3, 'encoder:image': 1, 'encoder:audio': 0 } } }));
  t.deepEqual(o.deployment.map((d) => [d.label, d.executors]).sort(), [['encoder:audio', 0], ['encoder:image', 1], ['llm:cornserve/tiny-vlm-a', 3]]);
  t.is(o.results.completed, 200);
  t.deepEqual(o.invariants, { overCapacity: 0, startedBeforeProducers: 0, endedTwice: 0, neverEnded: 0 });
});

test('only an encoder may have 0 executors', async (t) => {
  const sc = await parseScenario({ ...base, deployment: { replicas: { 'llm:cornserve/tiny-vlm-a': 0, 'encoder:image': 1 } } });
  await t.throwsAsync(simulate(sc), { message: /deployment.replicas.llm:cornserve\/tiny-vlm-a: only an encoder may have 0 executors/ });
});
