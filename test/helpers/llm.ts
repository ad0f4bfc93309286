/**
 * LLM fixtures: the built tiny LLM folders, a loaded model per name (cached per process), and prompts from chat
 * messages.
 */
import type { ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { LaunchSpec } from '../../lib/descriptor.js';
import type { ChatMessage } from '../../lib/openai.js';
import { LlmModel } from '../../executors/llm/model.js';
import { buildPrompt, renderChat, type MediaEmbedding, type Prompt } from '../../executors/llm/prompt.js';
import { buildLlmServer, type LlmServer, type LlmServerOptions } from '../../executors/llm/server.js';
import { modelsDir } from './models.js';
import { startServerProcess } from './server-process.js';

/** The built-in tiny LLMs, the Hugging Face-layout Qwen2-style decoder (also in Optimum's merged and pair layouts) and split VLM (builders/hf-decoder.ts, hf-vlm.ts). */
export type LlmName = 'tiny-lm-a' | 'tiny-lm-b' | 'tiny-qwen2' | 'tiny-qwen2-vl' | 'tiny-qwen2-merged' | 'tiny-qwen2-pair';

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

export interface ChatStream {
  status: number;
  /** Parsed `data:` payloads before [DONE], in order. */
  chunks: Record<string, any>[];
  /** The `data:` payloads as sent (JSON text). */
  raw: string[];
  /** All response bytes (to check UTF-8 validity). */
  bytes: Buffer;
  done: boolean;
}

/** POSTs a streaming chat request and reads the SSE reply to the end (or until `stopAfter` chunks, then aborts). */
export async function streamChat(url: string, body: Record<string, unknown>, opts: { stopAfter?: number; headers?: Record<string, string> } = {}): Promise<ChatStream> {
  const ac = new AbortController();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...opts.headers }, body: JSON.stringify({ ...body, stream: true }), signal: ac.signal,
  });
  const out: ChatStream = { status: res.status, chunks: [], raw: [], bytes: Buffer.alloc(0), done: false };
  const parts: Buffer[] = [];
  let buf = '';
  const decoder = new TextDecoder();
  try {
    for await (const piece of res.body as unknown as AsyncIterable<Uint8Array>) {
      parts.push(Buffer.from(piece));
      buf += decoder.decode(piece, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const event = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (!event.startsWith('data: ')) continue;
        const data = event.slice(6);
        if (data === '[DONE]') out.done = true;
        else {
          out.raw.push(data);
          out.chunks.push(JSON.parse(data));
        }
      }
      if (opts.stopAfter !== undefined && out.chunks.length >= opts.stopAfter) {
        ac.abort();
        break;
      }
    }
  } catch (e) {
    if (!ac.signal.aborted) throw e;
  }
  out.bytes = Buffer.concat(parts);
  return out;
}

/** The content of a chat stream's chunks, concatenated. */
export const streamText = (s: ChatStream) => s.chunks.map((c) => c.choices?.[0]?.delta?.content ?? '').join('');

export async function postChat(url: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

export interface RunningLlmServer {
  url: string;
  server: LlmServer;
  info(): Promise<Record<string, any>>;
  metrics(): Promise<string>;
  close(): Promise<void>;
}

/** An LLM server (in this process) listening on a free loopback port. */
export async function startLlmServer(model: LlmModel, opts: Omit<LlmServerOptions, 'model'> = {}): Promise<RunningLlmServer> {
  const server = buildLlmServer({ model, ...opts });
  const http = await new Promise<Server>((resolve) => {
    const h = server.app.listen(0, '127.0.0.1', () => resolve(h));
  });
  const addr = http.address() as AddressInfo;
  const url = `http://127.0.0.1:${addr.port}`;
  return {
    url,
    server,
    info: async () => (await fetch(`${url}/info`)).json() as Promise<Record<string, any>>,
    metrics: async () => (await fetch(`${url}/metrics`)).text(),
    async close() {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
      await server.close();
    },
  };
}

export interface LaunchedProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts a descriptor's LaunchSpec as a real child process, the way the local platform does (PORT and the
 * spec's env), and waits until its health path answers 200 (or `expectHealthy: false`: until it listens).
 */
export async function launchExecutor(spec: LaunchSpec, env: Record<string, string> = {}, expectHealthy = true): Promise<LaunchedProcess> {
  const p = await startServerProcess({
    entry: spec.entry, args: spec.args, env: { ...spec.env, ...env },
    ...(spec.healthPath ? { healthPath: spec.healthPath } : {}),
    ...(expectHealthy ? {} : { healthy: () => true }),
  });
  return { url: p.url, child: p.child, stop: p.stop };
}
