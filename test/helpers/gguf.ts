/**
 * GGUF fixtures: the built tiny llama GGUF, files llama.cpp must refuse (truncated, unknown architecture) in a
 * scratch folder, and the reference: node-llama-cpp's own greedy generation on the same file, used directly.
 */
import { copyFile, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, type LlamaModel, type Token } from 'node-llama-cpp';
import { TINY_LLAMA_GGUF, ggufLlamaBytes } from '../../executors/models/builders/gguf-llama.js';
import { modelsDir } from './models.js';

export async function tinyGguf(): Promise<string> {
  return join(await modelsDir(), TINY_LLAMA_GGUF.folder, TINY_LLAMA_GGUF.file);
}

/**
 * A scratch models folder: `chat.gguf` (the tiny model), `truncated.gguf` (its first half), `alien.gguf` (the same
 * model declaring an architecture llama.cpp does not know).
 */
export async function ggufScratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cs-gguf-'));
  const good = await tinyGguf();
  await copyFile(good, join(dir, 'chat.gguf'));
  const bytes = await readFile(good);
  await writeFile(join(dir, 'truncated.gguf'), bytes.subarray(0, bytes.length >> 1));
  await writeFile(join(dir, 'alien.gguf'), ggufLlamaBytes({ ...TINY_LLAMA_GGUF, architecture: 'nosucharch' }));
  return dir;
}

/** What the tiny model's ChatML template renders for one user message (with its default system message). */
export const chatmlPrompt = (user: string) =>
  `<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n${user}<|im_end|>\n<|im_start|>assistant\n`;

export interface GgufReference {
  model: LlamaModel;
  /** node-llama-cpp's greedy tokens for a user message: its tokenizer, one sequence, `evaluate` at temperature 0. */
  greedy(user: string, maxTokens: number): Promise<{ prompt: number[]; tokens: number[]; text: string }>;
  close(): Promise<void>;
}

export async function ggufReference(file: string): Promise<GgufReference> {
  const llama = await getLlama({ gpu: false, build: 'never' });
  const model = await llama.loadModel({ modelPath: file });
  const context = await model.createContext({ contextSize: 512, sequences: 1, threads: 1 });
  let queue: Promise<unknown> = Promise.resolve();
  const greedy = async (user: string, maxTokens: number) => {
    const prompt = [...model.tokenize(chatmlPrompt(user), true)];
    const seq = context.getSequence();
    const tokens: number[] = [];
    try {
      for await (const t of seq.evaluate(prompt as Token[], { temperature: 0 })) {
        tokens.push(t);
        if (tokens.length >= maxTokens) break;
      }
    } finally {
      seq.dispose();
    }
    return { prompt, tokens, text: model.detokenize(tokens as Token[]) };
  };
  return {
    model,
    greedy(user, maxTokens) {
      // One sequence: calls take turns.
      const run = queue.then(() => greedy(user, maxTokens));
      queue = run.catch(() => undefined);
      return run;
    },
    async close() {
      await context.dispose();
      await model.dispose();
    },
  };
}
