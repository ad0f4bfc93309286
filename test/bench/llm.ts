/**
 * LLM benchmark: decode tokens/s and time to first token through the LLM executor (a child process, streaming
 * SSE over HTTP, continuous batching) at 1, 8 and 32 concurrent requests, next to the direct in-process decode
 * loop over the same model (executors/llm/direct.ts: the same prompts as one static batch, no HTTP, no
 * scheduler) in the same run. Every request generates exactly `TOKENS` tokens (greedy, ignore_eos). Served and
 * direct runs alternate in pairs (order flipped every pair); figures are medians of `REPS` runs and each ratio
 * is the median of the per-pair ratios (the machine's load drifts; a pair sees about the same load).
 *
 *   node --import tsx test/bench/llm.ts
 */
import http from 'node:http';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { llmDescriptor } from '../../control/descriptors/llm.js';
import type { LaunchSpec } from '../../lib/descriptor.js';
import { generateBatch } from '../../executors/llm/direct.js';
import { LlmModel } from '../../executors/llm/model.js';
import { LLMTask } from '../../functions/tasks/llm.js';
import { type LlmName, launchExecutor, llmDir, samplePrompts, userPrompt } from '../helpers/llm.js';
import { modelsDir } from '../helpers/models.js';
import { processCpuMs } from '../../bench/client/proc.js';
import { median, formatTable, ownCpuMs, type BenchResult } from './types.js';

const MODEL_ID = 'cornserve/tiny-vlm-a';
/** Completion tokens per request (greedy, EOS ignored). */
export const TOKENS = 128;
const REPS = 5;
const LEVELS = [1, 8, 32];
/** onnxruntime threads for both the executor and the direct loop (the other core serves HTTP and the client). */
const THREADS = Number(process.env.BENCH_LLM_THREADS ?? 1);

export interface Run { tokensPerSec: number; ttftMs: number; cpuMsPerToken: number }

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * One streaming request over node:http (lighter per chunk than fetch: the client shares the machine with the
 * server). Resolves with the time of the first content chunk and the completion tokens from the usage chunk.
 */
function streamOne(url: URL, modelId: string, content: string, t0: number, tokens: number): Promise<{ firstMs: number; tokens: number }> {
  const body = JSON.stringify({
    model: modelId, messages: [{ role: 'user', content }], max_tokens: tokens, temperature: 0, ignore_eos: true,
    stream: true, stream_options: { include_usage: true },
  });
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: '/v1/chat/completions', method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}`));
      res.setEncoding('utf8');
      let firstMs = -1;
      let tail = '';
      res.on('data', (s: string) => {
        if (firstMs < 0 && /"delta":\{"content":"[^"]/.test(s)) firstMs = performance.now() - t0;
        tail = (tail + s).slice(-600);
      });
      res.on('end', () => {
        const m = /"completion_tokens":(\d+)/.exec(tail);
        resolve({ firstMs, tokens: m ? Number(m[1]) : 0 });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function served(url: string, modelId: string, pid: number, prompts: string[], want = TOKENS): Promise<Run> {
  const cpu0 = processCpuMs(pid) + ownCpuMs();
  const t0 = performance.now();
  const rs = await Promise.all(prompts.map((p) => streamOne(new URL(url), modelId, p, t0, want)));
  const wall = performance.now() - t0;
  const tokens = rs.reduce((a, r) => a + r.tokens, 0);
  if (tokens !== prompts.length * want) throw new Error(`served ${tokens} tokens, expected ${prompts.length * want}`);
  const cpu = processCpuMs(pid) + ownCpuMs() - cpu0;
  return { tokensPerSec: tokens / (wall / 1000), ttftMs: median(rs.map((r) => r.firstMs)), cpuMsPerToken: cpu / tokens };
}

async function direct(model: LlmModel, prompts: string[], want = TOKENS): Promise<Run> {
  const first: number[] = [];
  const cpu0 = ownCpuMs();
  const t0 = performance.now();
  const gens = await generateBatch(model, prompts.map((p) => userPrompt(model, p)), { maxTokens: want, temperature: 0, ignoreEos: true }, (i, _tok, text) => {
    if (first[i] === undefined && text) first[i] = performance.now() - t0;
  });
  const wall = performance.now() - t0;
  const tokens = gens.reduce((a, g) => a + g.tokens.length, 0);
  return { tokensPerSec: tokens / (wall / 1000), ttftMs: median(first.filter((x) => x !== undefined)), cpuMsPerToken: (ownCpuMs() - cpu0) / tokens };
}

/** What one served-vs-direct decode comparison runs over (this file's run(); hf-llm.ts for the Qwen2-style decoder). */
export interface LlmBenchCase {
  /** The LLMTask's modelId (the executor resolves it as the platform would). */
  modelId: string;
  folder: LlmName;
  levels: readonly number[];
  /** Row name prefix, e.g. `llm` or `qwen2 (HF)`. */
  label: string;
  /** A folder outside the built models (its parent is the executor's model directory): a benchmark's own configuration. */
  dir?: string;
  /** Prompts (the first `level` are sent); default: short varied ones. */
  prompts?: string[];
  /** Tokens per request. @default 128 */
  tokens?: number;
  /** Pairs per level. @default 5 */
  reps?: number;
}

export async function runLlmBench(c0: LlmBenchCase): Promise<BenchResult[]> {
  const { modelId } = c0;
  const dir = c0.dir ?? await llmDir(c0.folder);
  const tokens = c0.tokens ?? TOKENS;
  const model = await LlmModel.load(dir, { threads: THREADS, modelId });
  const task = new LLMTask({ modelId, receiveEmbeddings: false });
  const spec = llmDescriptor.launch(task);
  try {
    return await compareServedDirect({
      ...c0, tokens, spec: { ...spec, args: [...spec.args, '--max-batch', '32', '--threads', String(THREADS)] },
      ...(c0.dir ? { modelsDir: dirname(c0.dir) } : {}),
      direct: (prompts) => direct(model, prompts, tokens), engine: `${THREADS} onnxruntime thread(s) each`,
    });
  } finally {
    await model.close();
  }
}

/** Served (the executor `spec` launches, over HTTP) against `direct` on the same prompts, at each level. */
export async function compareServedDirect(c0: {
  modelId: string; label: string; levels: readonly number[]; spec: LaunchSpec; direct: (prompts: string[]) => Promise<Run>;
  /** How both sides run, for the notes. */
  engine: string;
  /** The executor's model directory (CORNSERVE_MODELS); default: the built models. */
  modelsDir?: string;
  prompts?: string[];
  /** Tokens per request. @default 128 */
  tokens?: number;
  /** Pairs per level. @default 5 */
  reps?: number;
}): Promise<BenchResult[]> {
  const { modelId, label } = c0;
  const tokens = c0.tokens ?? TOKENS;
  const reps = c0.reps ?? REPS;
  // CORNSERVE_MODELS too: a Hugging Face folder's name resolves under the model directories.
  const exec = await launchExecutor(c0.spec, { CORNSERVE_MODELS_DIR: await modelsDir(), CORNSERVE_MODELS: c0.modelsDir ?? await modelsDir(), CORNSERVE_LOG_LEVEL: 'warn' });
  const results: BenchResult[] = [];
  try {
    const all = c0.prompts ?? samplePrompts(32);
    await served(exec.url, modelId, exec.child.pid!, all.slice(0, 1), tokens); // warm-up both paths
    await c0.direct(all.slice(0, 1));
    for (const c of c0.levels) {
      const prompts = all.slice(0, c);
      const s: Run[] = [];
      const d: Run[] = [];
      // Pairs in alternating order; each pair's ratio cancels the machine's slow load swings.
      for (let r = 0; r < reps; r++) {
        if (r % 2 === 0) {
          s.push(await served(exec.url, modelId, exec.child.pid!, prompts, tokens));
          d.push(await c0.direct(prompts));
        } else {
          d.push(await c0.direct(prompts));
          s.push(await served(exec.url, modelId, exec.child.pid!, prompts, tokens));
        }
      }
      const st = median(s.map((x) => x.tokensPerSec));
      const dt = median(d.map((x) => x.tokensPerSec));
      const sf = median(s.map((x) => x.ttftMs));
      const df = median(d.map((x) => x.ttftMs));
      const tputRatio = median(s.map((x, i) => x.tokensPerSec / d[i]!.tokensPerSec));
      const ttftRatio = median(s.map((x, i) => d[i]!.ttftMs / x.ttftMs));
      const cpuRatio = median(s.map((x, i) => d[i]!.cpuMsPerToken / x.cpuMsPerToken));
      results.push({
        name: `${label} decode, ${c} concurrent`, figure: st, unit: 'tok/s', baseline: dt, baselineName: `direct loop, static batch of ${c}`,
        ratio: tputRatio, ...(c === 8 ? { target: '>= 0.8 of direct' } : {}),
        notes: `served (HTTP + SSE + continuous batching, executor process) / direct, median of ${reps} per-pair ratios; ${tokens} tokens per request, greedy; ${c0.engine}`,
      });
      results.push({
        name: `${label} time to first token, ${c} concurrent`, figure: sf, unit: 'ms', baseline: df, baselineName: `direct loop, static batch of ${c}`,
        ratio: ttftRatio, notes: 'median over requests; ratio = direct / served (higher is better), median of per-pair ratios',
      });
      results.push({
        name: `${label} CPU per token, ${c} concurrent`, figure: median(s.map((x) => x.cpuMsPerToken)), unit: 'ms', baseline: median(d.map((x) => x.cpuMsPerToken)),
        baselineName: `direct loop, static batch of ${c}`, ratio: cpuRatio,
        notes: 'served = executor process + benchmark client; less sensitive to machine load than wall time; ratio = direct / served',
      });
    }
  } finally {
    await exec.stop();
  }
  return results;
}

export function run(): Promise<BenchResult[]> {
  return runLlmBench({ modelId: MODEL_ID, folder: 'tiny-lm-a', levels: LEVELS, label: 'llm' });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(formatTable(await run()));
}
