/**
 * Decode without whole-cache copies: bytes the executor copies per generated token (policies/kv-cache.ts
 * `copyMeter`, counted in code: decoder outputs onnxruntime-node copies into JS, slices, cache writes, moves and
 * relayouts) and served ÷ direct decode tokens/s at 1 and 8 streams (llm.ts's runLlmBench), for tiny-qwen2 and for
 * a configuration where the cache dominates a step (8 layers, hidden 512, prompts near the 2,048-token context;
 * built into .bench/ on first use).
 *
 *   node --import tsx test/bench/kv-decode.ts [--quick]   (--quick: the bytes rows only)
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateBatch } from '../../executors/llm/direct.js';
import { copyMeter } from '../../policies/kv-cache.js';
import { LlmModel } from '../../executors/llm/model.js';
import { BENCH_QWEN2_LARGE, buildHfDecoder } from '../../executors/models/builders/hf-decoder.js';
import { writeBuiltModel } from '../../executors/models/build.js';
import { llmDir, samplePrompts, userPrompt } from '../helpers/llm.js';
import { repoRoot } from '../helpers/repo.js';
import { runLlmBench } from './llm.js';
import { formatTable, type BenchResult } from './types.js';

const THREADS = Number(process.env.BENCH_LLM_THREADS ?? 1);

/** The large configuration's folder (built once per source hash). */
async function largeDir(): Promise<string> {
  return writeBuiltModel(join(repoRoot, '.bench', 'models'), buildHfDecoder(BENCH_QWEN2_LARGE));
}

/** Prompts of about `n` tokens each (distinct openings). */
const longPrompts = (count: number, n: number) =>
  samplePrompts(count).map((p) => `${p} ${'the cat sat on the mat and '.repeat(Math.ceil(n / 8))}`.slice(0, n));

/** Bytes copied per decode token by the direct loop: the difference of two runs that differ in decode steps only. */
async function bytesPerToken(model: LlmModel, prompts: string[], short: number, long: number): Promise<number> {
  const run = async (tokens: number) => {
    const b0 = copyMeter.bytes;
    await generateBatch(model, prompts.map((p) => userPrompt(model, p)), { maxTokens: tokens, temperature: 0, ignoreEos: true });
    return copyMeter.bytes - b0;
  };
  const a = await run(short);
  const b = await run(long);
  return (b - a) / (prompts.length * (long - short));
}

interface Case { label: string; dir: string; prompts: string[]; tokens: number }

export async function run(quick = false): Promise<BenchResult[]> {
  const cases: Case[] = [
    { label: 'tiny-qwen2', dir: await llmDir('tiny-qwen2'), prompts: samplePrompts(8), tokens: 128 },
    { label: 'qwen2 8x512 ctx 2k', dir: await largeDir(), prompts: longPrompts(8, 1800), tokens: 32 },
  ];
  const results: BenchResult[] = [];
  for (const c of cases) {
    const model = await LlmModel.load(c.dir, { threads: THREADS });
    try {
      for (const n of [1, 8]) {
        const perToken = await bytesPerToken(model, c.prompts.slice(0, n), 4, 4 + Math.min(c.tokens, 16));
        const cacheBytes = 2 * model.config.layers * model.config.heads * model.config.headDim * 4 * (userPrompt(model, c.prompts[0]!).n + 12);
        results.push({
          name: `${c.label} KV bytes copied per decode token, ${n} stream(s)`, figure: perToken / 1024, unit: 'KiB', baseline: cacheBytes / 1024,
          baselineName: 'one sequence\'s whole cache', ratio: cacheBytes / Math.max(perToken, 1),
          notes: 'counted in code (copyMeter); ratio = whole cache / copied (higher is better)',
        });
      }
    } finally {
      await model.close();
    }
    if (quick) continue;
    const name = c.dir.split('/').pop()!;
    results.push(...(await runLlmBench({ modelId: name, folder: 'tiny-qwen2', dir: c.dir, levels: [1, 8], label: c.label, prompts: c.prompts, tokens: c.tokens, reps: 3 }))
      .filter((r) => r.name.includes(' decode, '))
      .map((r) => ({ ...r, target: '>= 0.9 of direct' })));
  }
  return results;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(formatTable(await run(process.argv.includes('--quick'))));
}
