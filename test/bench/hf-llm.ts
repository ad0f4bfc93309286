/**
 * The Qwen2-style decoder in the Hugging Face layout (tiny-qwen2: onnx/model.onnx taking input_ids, GQA,
 * tokenizer.json + ChatML template): decode tokens/s served (LLM executor process, HTTP + SSE, continuous batching)
 * vs the direct in-process loop over the same folder, at 1 and 8 concurrent requests, same onnxruntime thread count
 * on both sides (llm.ts's runLlmBench: alternating pairs, medians of per-pair ratios).
 *
 *   node --import tsx test/bench/main.ts --only hf-llm
 */
import { fileURLToPath } from 'node:url';
import { runLlmBench } from './llm.js';
import { formatTable, type BenchResult } from './types.js';

export function run(): Promise<BenchResult[]> {
  return runLlmBench({ modelId: 'tiny-qwen2', folder: 'tiny-qwen2', levels: [1, 8], label: 'qwen2 HF decoder' });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(formatTable(await run()));
}
