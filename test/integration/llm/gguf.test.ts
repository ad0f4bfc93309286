/**
 * The GGUF executor on llama.cpp: its engine batching several sequences of one context, its process as the
 * `llama-cpp` descriptor launches it, and the files it must refuse at start, each with its code.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { llamaCppDescriptor } from '../../../control/descriptors/llm.js';
import { GgufEngine } from '../../../executors/llm/gguf/engine.js';
import { loadGguf, loadLlama } from '../../../executors/llm/gguf/model.js';
import { LLMTask } from '../../../functions/tasks/llm.js';
import { ggufReference, ggufScratch, tinyGguf, type GgufReference } from '../../helpers/gguf.js';
import { launchExecutor, postChat, streamChat, streamText } from '../../helpers/llm.js';
import { modelsDir } from '../../helpers/models.js';
import { repoRoot } from '../../helpers/repo.js';

const PROMPTS = ['hello the world', 'the cat sat on the mat', 'a', 'is this on? 12345'];
let ref: GgufReference;
let scratch: string;

test.before(async () => {
  ref = await ggufReference(await tinyGguf());
  scratch = await ggufScratch();
});
test.after.always(async () => {
  await ref?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

test.serial('requests generated together through one context each get node-llama-cpp\'s own greedy tokens', async (t) => {
  const llama = await loadLlama('cpu');
  const loaded = await loadGguf(llama, await tinyGguf(), { contextSize: 256, sequences: 4, memoryLimitBytes: 2 ** 32, threads: 1 });
  const engine = new GgufEngine(loaded);
  t.teardown(async () => {
    await engine.close();
    await loaded.close();
  });
  const lengths = [12, 20, 7, 16];
  const expected = await Promise.all(PROMPTS.map((p, i) => ref.greedy(p, lengths[i]!)));
  let most = 0;
  const served = await Promise.all(PROMPTS.map((p, i) => engine.submit({
    ids: expected[i]!.prompt, maxTokens: lengths[i]!, temperature: 0, topP: 1, stop: [], ignoreEos: false, deadline: Date.now() + 120_000,
    onText: () => void (most = Math.max(most, engine.stats().running)),
  })));
  served.forEach((r, i) => {
    t.deepEqual(r.tokens, expected[i]!.tokens, PROMPTS[i]);
    t.is(r.text, expected[i]!.text);
    t.is(r.finishReason, 'length');
  });
  t.is(most, 4, 'all four sequences ran at once');
});

test.serial('a request beyond the free sequences waits for one and then gets its greedy tokens', async (t) => {
  const llama = await loadLlama('cpu');
  const loaded = await loadGguf(llama, await tinyGguf(), { contextSize: 256, sequences: 1, memoryLimitBytes: 2 ** 32, threads: 1 });
  const engine = new GgufEngine(loaded);
  t.teardown(async () => {
    await engine.close();
    await loaded.close();
  });
  const expected = await Promise.all(PROMPTS.slice(0, 2).map((p) => ref.greedy(p, 10)));
  const both = expected.map((e) => engine.submit({ ids: e.prompt, maxTokens: 10, temperature: 0, topP: 1, stop: [], ignoreEos: false, deadline: Date.now() + 120_000 }));
  t.is(engine.stats().waiting, 1);
  const served = await Promise.all(both);
  t.deepEqual(served.map((r) => r.tokens), expected.map((e) => e.tokens));
});

const task = (modelId: string, memoryMiB?: number) => new LLMTask({ modelId, receiveEmbeddings: false, ...(memoryMiB ? { memoryMiB } : {}) }, { descriptor: 'llama-cpp' });

test.serial('the executor the llama-cpp descriptor launches streams node-llama-cpp\'s greedy text to concurrent clients', async (t) => {
  const spec = llamaCppDescriptor.launch(task('tiny-llama-gguf'));
  const exec = await launchExecutor(spec, { CORNSERVE_MODELS_DIR: await modelsDir() });
  t.teardown(() => exec.stop());
  const streams = await Promise.all(PROMPTS.map((p) => streamChat(exec.url, {
    model: 'tiny-llama-gguf', messages: [{ role: 'user', content: p }], max_tokens: 14, temperature: 0, stream_options: { include_usage: true },
  })));
  for (const [i, s] of streams.entries()) {
    const e = await ref.greedy(PROMPTS[i]!, 14);
    t.is(s.status, 200);
    t.true(s.done);
    t.is(streamText(s), e.text);
    t.is(s.chunks.at(-1)!.usage.completion_tokens, e.tokens.length);
    t.is(s.chunks.at(-1)!.usage.prompt_tokens, e.prompt.length, 'the executor renders the GGUF\'s own chat template');
  }
  const img = await postChat(exec.url, { model: 'tiny-llama-gguf', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AA==' } }] }] });
  t.is(img.status, 400);
  t.is(img.body.error.code, 'LLM_MULTIMODAL_UNSUPPORTED');
});

/** Runs the executor the descriptor would launch for `modelId` until it exits; its exit code and stderr. */
async function startFailure(modelId: string, memoryMiB?: number, extra: string[] = []): Promise<{ code: number; stderr: string }> {
  const spec = llamaCppDescriptor.launch(task(modelId, memoryMiB));
  try {
    await promisify(execFile)(process.execPath, ['--import', 'tsx', spec.entry, ...spec.args, ...extra], {
      cwd: repoRoot, env: { ...process.env, CORNSERVE_MODELS: scratch, PORT: '0' }, timeout: 120_000,
    });
  } catch (e) {
    const err = e as { code: number; stderr: string };
    return { code: err.code, stderr: err.stderr };
  }
  throw new Error(`the executor for ${modelId} started`);
}

test.serial('a truncated GGUF file refuses to start with GGUF_TRUNCATED', async (t) => {
  const r = await startFailure('truncated.gguf');
  t.is(r.code, 1);
  t.regex(r.stderr, /^GGUF_TRUNCATED: .*truncated\.gguf is truncated: \d+ bytes/m);
});

test.serial('a GGUF file of an architecture llama.cpp does not know refuses to start with GGUF_ARCHITECTURE_UNSUPPORTED', async (t) => {
  const r = await startFailure('alien.gguf');
  t.is(r.code, 1);
  t.regex(r.stderr, /^GGUF_ARCHITECTURE_UNSUPPORTED: .*architecture 'nosucharch'/m);
});

test.serial('a GGUF model larger than the memory its task asks for refuses to start with GGUF_TOO_LARGE', async (t) => {
  const r = await startFailure('chat.gguf', 1);
  t.is(r.code, 1);
  t.regex(r.stderr, /^GGUF_TOO_LARGE: .*needs about \d+ MiB .*given 1 MiB/m);
});

test.serial('a model id naming no GGUF file refuses to start with GGUF_NOT_FOUND naming where it looked', async (t) => {
  const r = await startFailure('missing.gguf');
  t.is(r.code, 1);
  t.true(r.stderr.includes(`GGUF_NOT_FOUND: 'missing.gguf' is neither a .gguf file nor a folder holding one (searched: ${join(scratch, 'missing.gguf')}`), r.stderr);
});

/** Only where no NVIDIA driver is: on a GPU node the CUDA build loads. */
const withoutGpu = existsSync('/dev/nvidiactl') ? test.skip : test.serial;

withoutGpu('asking for the CUDA build where it cannot load refuses to start with GGUF_GPU_UNAVAILABLE naming the package', async (t) => {
  const r = await startFailure('chat.gguf', undefined, ['--gpu', 'cuda']);
  t.is(r.code, 1);
  t.regex(r.stderr, /^GGUF_GPU_UNAVAILABLE: the llama\.cpp cuda binary does not load: .*@node-llama-cpp\/linux-x64-cuda/m);
});
