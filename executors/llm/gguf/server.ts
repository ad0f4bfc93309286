/**
 * The GGUF executor's HTTP server: the LLM executor's wire contract (server.ts) over llama.cpp.
 *   POST /v1/chat/completions   streaming (SSE `data: {chunk}` … `data: [DONE]`) or one JSON completion
 *   GET  /v1/models  /health  /info  /metrics
 * Text only; `vllm_xargs` hidden-state forwarding and multimodal parts are refused with a code. Errors use
 * OpenAI's error shape; a client that disconnects frees its sequence at its next token.
 */
import express from 'express';
import { hopBodyLimitBytes } from '../../../lib/body-limit.js';
import { logger, type Logger } from '../../../lib/log.js';
import { traceRequests } from '../../../lib/telemetry.js';
import { deadlineOf } from '../../common/deadline.js';
import { ExecutorErrorCode } from '../../../lib/executor-errors.js';
import { healthRoute } from '../../common/health.js';
import { answerChat, llmErrors, openAIErrorHandler, toOpenAIError } from '../errors.js';
import { createLlmMetrics } from '../metrics.js';
import { ChunkWriter, completion, completionId, maxTokensFor, parseExecutorRequest, sseAnswer, usage, type ExecutorRequest } from '../openai.js';
import { GgufChat } from './chat.js';
import { GgufEngine, type GgufRequest } from './engine.js';
import type { LoadedGguf } from './model.js';

export interface GgufServerOptions {
  loaded: LoadedGguf;
  /** The model ids requests may name. */
  modelIds: string[];
  /** Where it runs, for /health and /info: the llama.cpp binary (cpu, cuda or vulkan) and its device (`cpu`, `cuda:0`). */
  gpu: string;
  device?: string;
  maxWaiting?: number;
  executorId?: string;
  /** Deadline of a request without an x-cornserve-deadline header. @default 300000 */
  defaultTimeoutMs?: number;
  log?: Logger;
}

export interface GgufServer {
  app: express.Express;
  engine: GgufEngine;
  close(): Promise<void>;
}


export function buildGgufServer(opts: GgufServerOptions): GgufServer {
  const { loaded, modelIds } = opts;
  const log = opts.log ?? logger('llm-gguf', { executor: opts.executorId });
  const engine = new GgufEngine(loaded, { ...(opts.maxWaiting !== undefined ? { maxWaiting: opts.maxWaiting } : {}), log });
  const chat = new GgufChat(loaded.model);
  const metrics = createLlmMetrics(() => engine.stats());
  // provider / device / cpuFallback: the execution fields every executor's /health carries (GET /tasks/list shows them).
  const where = {
    provider: opts.gpu, device: opts.device ?? opts.gpu, cpuFallback: false, engine: 'llama.cpp', gpu: opts.gpu, file: loaded.path, architecture: loaded.check.architecture,
  };
  let served = 0;
  const app = express();
  app.set('etag', false);
  app.use(traceRequests('llm-gguf'));
  app.use(express.json({ limit: hopBodyLimitBytes() }));

  app.get('/health', healthRoute([
    { name: 'engine', up: () => engine.alive, code: ExecutorErrorCode.ENGINE_DEAD, message: 'the engine stopped or llama.cpp generations keep failing' },
  ], { execution: where }));
  app.get('/info', (_req, res) => {
    res.json({ kind: 'llm-gguf', executorId: opts.executorId ?? null, modelIds, ...where, modalities: ['text'], served, receiving: 0, ...engine.stats() });
  });
  app.get('/v1/models', (_req, res) => {
    const created = Math.floor(Date.now() / 1000);
    res.json({ object: 'list', data: modelIds.map((id) => ({ id, object: 'model', created, owned_by: 'cornserve', max_model_len: loaded.contextSize })) });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  app.post('/v1/chat/completions', (req, res) => answerChat(res, { metrics, log, settle: () => void served++ }, async (signal, t0) => {
    let first = true;
    const firstToken = () => {
      if (first) metrics.ttft.observe((performance.now() - t0) / 1000);
      first = false;
    };
    const body = parseExecutorRequest(req.body);
    if (!modelIds.includes(body.model)) throw llmErrors.modelNotFound(`model ${body.model} is not served here (serves: ${modelIds.join(', ')})`);
    if ((body.n ?? 1) !== 1) throw llmErrors.badRequest('only n = 1 is supported', 'n');
    if (body.vllm_xargs && Object.keys(body.vllm_xargs).length) throw llmErrors.badRequest('a GGUF model on llama.cpp cannot forward hidden states', 'vllm_xargs');
    const deadline = deadlineOf(req, opts.defaultTimeoutMs ?? 300_000, llmErrors.badDeadline);
    const ids = chat.prompt(body.messages);
    const stop = body.stop === undefined ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
    const base: GgufRequest = {
      ids, deadline, signal, maxTokens: maxTokensFor(loaded.contextSize, body, ids.length, { owner: "this executor's", per: 'per sequence' }),
      temperature: body.temperature ?? 1, topP: body.top_p ?? 1, ...(body.seed !== undefined ? { seed: body.seed } : {}),
      stop: stop.filter((s) => s.length > 0), ignoreEos: body.ignore_eos ?? false,
    };
    metrics.promptTokens.inc(ids.length);
    const id = completionId();
    if (body.stream) {
      let outcome: string | undefined;
      const w = new ChunkWriter(id, body.model, body.stream_options?.include_usage ?? false);
      const send = sseAnswer(res, w);
      const pending = engine.submit({
        ...base,
        onText: (text) => {
          firstToken();
          if (text) send(w.content(text));
        },
      });
      res.status(200).set({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      try {
        const r = await pending;
        metrics.generationTokens.inc(r.tokens.length);
        send(w.finish(r.finishReason));
        if (body.stream_options?.include_usage) send(w.usage(usage(r.promptTokens, r.tokens.length)));
      } catch (e) {
        if (signal.aborted) return;
        const { body: error } = toOpenAIError(e);
        outcome = error.error.code;
        send(error);
      }
      send('[DONE]');
      res.end();
      return outcome;
    }
    const r = await engine.submit({ ...base, onText: firstToken });
    metrics.generationTokens.inc(r.tokens.length);
    res.json(completion(id, body.model, r.text, r.finishReason, usage(r.promptTokens, r.tokens.length)));
  }));

  app.use(openAIErrorHandler(log));

  return { app, engine, close: () => engine.close() };
}
