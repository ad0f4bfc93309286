/**
 * The GGUF executor (llama.cpp through node-llama-cpp, the `llama-cpp` descriptor) against node-llama-cpp used
 * directly on the same file, in the same run: served (executor process, HTTP + SSE, requests sharing the
 * sequences of one context) ÷ direct (the same prompts as concurrent sequences of one context in this process),
 * at 1 and 8 concurrent requests. One llama.cpp thread on both sides.
 *
 *   node --import tsx test/bench/gguf.ts
 */
import { fileURLToPath } from 'node:url';
import { getLlama, type Token } from 'node-llama-cpp';
import { llamaCppDescriptor } from '../../control/descriptors/llm.js';
import { LLMTask } from '../../functions/tasks/llm.js';
import { chatmlPrompt, tinyGguf } from '../helpers/gguf.js';
import { TOKENS, compareServedDirect, type Run } from './llm.js';
import { formatTable, median, ownCpuMs, type BenchResult } from './types.js';

const MODEL_ID = 'tiny-llama-gguf';
const SEQUENCES = 8;
const CONTEXT = 2048;

export async function run(): Promise<BenchResult[]> {
  const llama = await getLlama({ gpu: false, build: 'never' });
  const model = await llama.loadModel({ modelPath: await tinyGguf() });
  const context = await model.createContext({ contextSize: CONTEXT, sequences: SEQUENCES, threads: 1 });
  const sequences = Array.from({ length: SEQUENCES }, () => context.getSequence());
  const direct = async (prompts: string[]): Promise<Run> => {
    const cpu0 = ownCpuMs();
    const t0 = performance.now();
    const first: number[] = [];
    const counts = await Promise.all(prompts.map(async (p, i) => {
      const seq = sequences[i]!;
      let n = 0;
      try {
        for await (const _ of seq.evaluate(model.tokenize(chatmlPrompt(p), true) as Token[], { temperature: 0, yieldEogToken: true })) {
          if (n++ === 0) first.push(performance.now() - t0);
          if (n >= TOKENS) break;
        }
      } finally {
        await seq.clearHistory();
      }
      return n;
    }));
    const wall = performance.now() - t0;
    const tokens = counts.reduce((a, b) => a + b, 0);
    return { tokensPerSec: tokens / (wall / 1000), ttftMs: median(first), cpuMsPerToken: (ownCpuMs() - cpu0) / tokens };
  };
  const spec = llamaCppDescriptor.launch(new LLMTask({ modelId: MODEL_ID, receiveEmbeddings: false }, { descriptor: 'llama-cpp' }));
  try {
    return await compareServedDirect({
      modelId: MODEL_ID, label: 'gguf (llama.cpp)', levels: [1, SEQUENCES], direct,
      spec: { ...spec, args: [...spec.args, '--max-batch', String(SEQUENCES), '--context-size', String(CONTEXT), '--threads', '1'] },
      engine: `1 llama.cpp thread each, ${SEQUENCES} sequences of ${CONTEXT} tokens`,
    });
  } finally {
    await context.dispose();
    await model.dispose();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(formatTable(await run()));
}
