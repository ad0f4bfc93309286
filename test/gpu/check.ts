/**
 * `make gpu-check`: the platform on a machine's NVIDIA GPUs, end to end, in one bounded run (10 minutes).
 * Without a GPU (nvidia-smi absent or listing none) it says so and exits 0 without starting anything.
 * With GPUs: `cornserve doctor` (its problems stop the run), then `cornserve up --devices auto` with the example
 * apps (and the apps a step brings, registered), then each entry of STEPS (a request served on the GPU, timed), then each executor's provider and device
 * as the platform reports them (/tasks/list). Exit 0 when every step passed and every executor runs on a GPU.
 * A further check is one more entry in STEPS.
 */
import { discoverDevices } from '../../control/platform/gpus.js';
import { doctorCommand } from '../../control/cli/doctor.js';
import { launchUp, type LaunchedUp } from '../../control/compose/launch-up.js';
import { GatewayClient, type TaskInfo } from '../../control/gateway/client.js';
import { makeImage } from '../helpers/media.js';

const TOTAL_BUDGET_MS = 10 * 60_000;
const STEP_TIMEOUT_MS = 120_000;

interface StepResult {
  /** One line: what came back. */
  detail: string;
  /** Generated tokens, for tokens/s (absent for non-generating steps). */
  tokens?: number;
}

interface Step {
  name: string;
  /** The app the step calls; the run waits until it is registered. */
  app: string;
  /** The app's source when it is not one of functions/apps: the run registers it. */
  source?: string;
  run(up: LaunchedUp): Promise<StepResult>;
}

/** A chat app on the GGUF model `make models` builds, served by llama.cpp (the `llama-cpp` descriptor). */
const GGUF_APP = `
import { defineApp } from 'cornserve/sdk';
import { LLMTask, chatChunkSchema, chatRequestSchema } from 'cornserve/tasks';
const llm = new LLMTask({ modelId: 'tiny-llama-gguf', receiveEmbeddings: false }, { descriptor: 'llama-cpp' });
export default defineApp({
  name: 'gguf-chat', tasks: { llm },
  request: chatRequestSchema.omit({ cornserve_embeddings: true }), response: chatChunkSchema,
  async serve(request) { return llm.call(request); },
});`;

const imageUrl = async () => `data:image/png;base64,${(await makeImage(224, 224, { seed: 7 })).toString('base64')}`;

async function postJson(url: string, body: unknown): Promise<Response> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(STEP_TIMEOUT_MS) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status} ${(await res.text()).slice(0, 500)}`);
  return res;
}

/** A streamed chat of `max_tokens` 64, greedy, to `model` (an app name): its tokens and text. */
async function streamedChat(up: LaunchedUp, model: string, content: unknown): Promise<StepResult> {
  const res = await postJson(`${up.url}/v1/chat/completions`, { model, stream: true, max_tokens: 64, temperature: 0, messages: [{ role: 'user', content }] });
  const { tokens, text } = await streamedTokens(res);
  if (!tokens) throw new Error('the chat stream carried no tokens');
  return { detail: `${tokens} tokens: ${JSON.stringify(text.slice(0, 60))}`, tokens };
}

/** Counts the content chunks of an OpenAI chat stream (one token each from the LLM executor). */
async function streamedTokens(res: Response): Promise<{ tokens: number; text: string }> {
  let tokens = 0;
  let text = '';
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body!) {
    buf += decoder.decode(chunk as Uint8Array, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (!line.startsWith('data:') || line === 'data: [DONE]') continue;
      const delta = (JSON.parse(line.slice(5)) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content;
      if (delta) {
        tokens++;
        text += delta;
      }
    }
  }
  return { tokens, text };
}

export const STEPS: Step[] = [
  {
    name: 'image embedding (Eric, vision tower)',
    app: 'embed',
    async run(up) {
      const res = await postJson(`${up.url}/app/invoke/embed`, { request_data: { image_urls: [await imageUrl()] } });
      const body = (await res.json()) as { model: string; data: { embedding: number[] }[] };
      return { detail: `${body.model}: ${body.data.length} embedding(s) of ${body.data[0]?.embedding.length} floats` };
    },
  },
  {
    name: 'MLLM chat (Eric image encoder → LLM)',
    app: 'mllm',
    async run(up) {
      return streamedChat(up, 'mllm', [{ type: 'text', text: 'What is in this picture?' }, { type: 'image_url', image_url: { url: await imageUrl() } }]);
    },
  },
  {
    name: 'GGUF chat (llama.cpp, CUDA or Vulkan build)',
    app: 'gguf-chat',
    source: GGUF_APP,
    run: (up) => streamedChat(up, 'gguf-chat', 'Say something.'),
  },
];

async function waitForApps(client: GatewayClient, apps: string[], deadline: number): Promise<void> {
  for (;;) {
    const states = await client.listDetails();
    const missing = apps.filter((a) => !states.some((s) => s.name === a && s.state === 'ready'));
    if (!missing.length) return;
    if (Date.now() > deadline) throw new Error(`apps not ready in time: ${missing.join(', ')} (${JSON.stringify(states.map((s) => [s.name, s.state]))})`);
    await new Promise((r) => setTimeout(r, 2_000));
  }
}

function executorLines(tasks: TaskInfo[]): { lines: string[]; onCpu: string[] } {
  const lines: string[] = [];
  const onCpu: string[] = [];
  for (const t of tasks) {
    for (const e of t.executors) {
      const x = e.execution;
      lines.push(`  ${t.name} ${e.executor_id}: ${x ? `${x.provider} on ${x.device}${x.cpuFallback ? ' (CPU FALLBACK)' : ''}` : 'execution not reported'}`);
      if (!x || x.provider === 'cpu') onCpu.push(e.executor_id);
    }
  }
  return { lines, onCpu };
}

async function main(): Promise<number> {
  const started = Date.now();
  const deadline = started + TOTAL_BUDGET_MS;
  const devices = await discoverDevices();
  if (!devices.gpus.length) {
    console.log(`gpu-check: no NVIDIA GPU found (${devices.reason.replace(/: \d+ virtual CPU devices$/, '')}); nothing to check`);
    return 0;
  }
  console.log(`gpu-check: ${devices.reason}`);
  console.log('== cornserve doctor');
  const problems = await doctorCommand({ probe: true }, { out: (l) => console.log(l), err: (l) => console.error(l) });
  if (problems.length) {
    console.log('gpu-check: doctor found problems (above); fix them first');
    return 1;
  }
  console.log('== cornserve up --devices auto --apps functions/apps');
  const up = await launchUp({ args: ['--devices', 'auto', '--apps', 'functions/apps'], readyTimeoutMs: 300_000 });
  let failed = 0;
  try {
    const client = new GatewayClient(up.url, undefined, STEP_TIMEOUT_MS);
    for (const step of STEPS.filter((s) => s.source)) {
      const r = await client.register(step.source!, {});
      if (r.type === 'error') throw new Error(`registering the ${step.app} app failed: ${JSON.stringify(r)}`);
    }
    await waitForApps(client, [...new Set(STEPS.map((s) => s.app))], deadline);
    for (const step of STEPS) {
      const t0 = performance.now();
      try {
        const r = await step.run(up);
        const s = (performance.now() - t0) / 1000;
        console.log(`ok    ${step.name}: ${r.detail} in ${s.toFixed(2)} s${r.tokens ? `, ${(r.tokens / s).toFixed(1)} tokens/s` : ''}`);
      } catch (e) {
        failed++;
        console.log(`FAIL  ${step.name}: ${(e as Error).message}`);
      }
      if (Date.now() > deadline) throw new Error(`over the ${TOTAL_BUDGET_MS / 60_000}-minute budget`);
    }
    const { lines, onCpu } = executorLines(await client.tasks());
    console.log('== executors');
    for (const l of lines) console.log(l);
    if (onCpu.length) {
      failed++;
      console.log(`FAIL  executors not on a GPU: ${onCpu.join(', ')}`);
    }
  } finally {
    await up.stop();
  }
  console.log(`gpu-check: ${failed ? `${failed} failure(s)` : 'all passed'} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  return failed ? 1 : 0;
}

const timer = setTimeout(() => {
  console.error(`gpu-check: over the ${TOTAL_BUDGET_MS / 60_000}-minute budget, stopping`);
  process.exit(1);
}, TOTAL_BUDGET_MS + 60_000);
timer.unref();
process.exitCode = await main().catch((e: Error) => {
  console.error(`gpu-check: ${e.message}`);
  return 1;
});
