/**
 * LLM fixtures: the built tiny LLM folders, a loaded model per name (cached per process), and prompts from chat
 * messages.
 */
import { join } from 'node:path';
import type { ChatMessage } from '../../functions/tasks/openai.js';
import { LlmModel } from '../../executors/llm/model.js';
import { buildPrompt, renderChat, type MediaEmbedding, type Prompt } from '../../executors/llm/prompt.js';
import { modelsDir } from './models.js';

export type LlmName = 'tiny-lm-a' | 'tiny-lm-b';

export async function llmDir(name: LlmName): Promise<string> {
  return join(await modelsDir(), name);
}

const loaded = new Map<LlmName, Promise<LlmModel>>();

/** One LlmModel per name per process (1 onnxruntime thread: test files run in parallel). */
export function llm(name: LlmName): Promise<LlmModel> {
  let m = loaded.get(name);
  if (!m) {
    m = llmDir(name).then((dir) => LlmModel.load(dir, { threads: 1 }));
    loaded.set(name, m);
  }
  return m;
}

export function userPrompt(model: LlmModel, content: ChatMessage['content'], media: MediaEmbedding[] = []): Prompt {
  return buildPrompt(model, renderChat(model.tokenizer, [{ role: 'user', content }]), media);
}

/** Short varied user messages (different lengths, some multi-byte). */
export function samplePrompts(count: number): string[] {
  const words = ['hello', 'world', 'the quick brown fox', 'jumps over', 'the lazy dog', 'ünïcödé ✓', 'cornserve', '12345', 'a', '多模态'];
  return Array.from({ length: count }, (_, i) => Array.from({ length: 1 + ((i * 7) % 13) }, (_, j) => words[(i * 3 + j * 5) % words.length]).join(' '));
}
