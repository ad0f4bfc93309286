import test from 'ava';
import { admitCount, preemptCount } from '../../../policies/admission.js';
import { SimLlm } from '../../../sim/executors/llm.js';
import { IndependentDevice } from '../../../sim/engine/compute.js';
import { EventQueue } from '../../../sim/engine/queue.js';
import type { SimJob } from '../../../sim/executors/types.js';
import type { LlmModel } from '../../../sim/latency/models.js';

const limits = { maxBatch: 64, maxPrefillTokens: 100_000, padMultiple: 1 };
const prompt = (n: number) => ({ n, needsSlot: true });

test('a request whose prompt blocks are not free waits', (t) => {
  // 40 tokens = 3 blocks of 16: two fit in 6 free blocks, the third waits.
  t.is(admitCount([40, 40, 40], 0, { ...limits, kv: { freeBlocks: 6, blockSize: 16 } }, prompt), 2);
  t.is(admitCount([40], 2, { ...limits, kv: { freeBlocks: 2, blockSize: 16 } }, prompt), 0, 'a busy engine does not overcommit');
});

test('admission leaves the watermark blocks free', (t) => {
  t.is(admitCount([32], 0, { ...limits, kv: { freeBlocks: 2, blockSize: 16, watermarkBlocks: 1 } }, prompt), 0);
  t.is(admitCount([32], 0, { ...limits, kv: { freeBlocks: 3, blockSize: 16, watermarkBlocks: 1 } }, prompt), 1);
});

test('a preempted request is readmitted with the blocks of its prompt and generated tokens', (t) => {
  const view = (w: { p: number; g: number }) => ({ n: w.p + w.g, needsSlot: true });
  t.is(admitCount([{ p: 16, g: 17 }], 0, { ...limits, kv: { freeBlocks: 2, blockSize: 16 } }, view), 0, '33 tokens need 3 blocks');
  t.is(admitCount([{ p: 16, g: 16 }], 0, { ...limits, kv: { freeBlocks: 2, blockSize: 16 } }, view), 1);
});

test('decode preempts the latest-admitted sequences until the rest can grow', (t) => {
  t.is(preemptCount([{ holds: 2, needs: 1 }, { holds: 2, needs: 1 }], 2), 0);
  t.is(preemptCount([{ holds: 2, needs: 1 }, { holds: 2, needs: 1 }, { holds: 1, needs: 1 }], 1), 1, 'the last one gives back its block');
  t.is(preemptCount([{ holds: 4, needs: 1 }], 0), 1, 'a lone sequence that cannot grow waits');
});

const model = (kvTokens: number): LlmModel => ({ prefill: { a: 1, b: 0, c: 0 }, decode: { a: 1, b: 0, c: 0 }, kvTokens, kvBlockSize: 16, maxBatch: 64, maxPrefillTokens: 100_000, padMultiple: 1, bytesPerToken: 0 });

function run(kvTokens: number, jobs: Array<{ prompt: number; output: number }>) {
  const events = new EventQueue();
  const llm = new SimLlm('llm', 0, events, new IndependentDevice(events), model(kvTokens));
  const tokens = jobs.map(() => 0);
  const doneAt: number[] = jobs.map(() => -1);
  jobs.forEach((j, i) => {
    const job: SimJob = { id: i, units: 0, promptTokens: j.prompt, outputTokens: j.output, onToken: () => { tokens[i]!++; }, done: (ms) => { doneAt[i] = ms; } };
    llm.submit(job);
  });
  events.run(Infinity);
  return { llm, tokens, doneAt };
}

test('the batch is bounded by KV blocks, not only by the batch cap', (t) => {
  // 1,600 tokens = 100 blocks (watermark 1): each request's 30-token prompt and 2 decoded tokens fit 2 blocks.
  const { llm, doneAt } = run(1600, Array.from({ length: 60 }, () => ({ prompt: 30, output: 3 })));
  t.true(doneAt.every((d) => d > 0));
  t.true(llm.maxBlocksUsed <= llm.totalBlocks);
  t.is(llm.preemptions, 0, 'the decoded tokens stay inside the 2 prompt blocks');
  t.true(llm.batches > 2, 'not all 60 fit in one prefill');
});

test('preemption recomputes a sequence and it still delivers every token', (t) => {
  // 8 blocks: two 48-token prompts take 3 blocks each; both grow past 64 tokens, so one is preempted.
  const { llm, tokens, doneAt } = run(128, [{ prompt: 48, output: 30 }, { prompt: 48, output: 30 }]);
  t.true(llm.preemptions >= 1);
  t.deepEqual(tokens, [30, 30]);
  t.true(doneAt[1]! > doneAt[0]!, 'the preempted one finishes after the one that kept its blocks');
  t.true(llm.maxBlocksUsed <= llm.totalBlocks);
});
