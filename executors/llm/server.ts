/**
 * The LLM executor's HTTP server: an OpenAI-compatible chat-completions endpoint over the in-process engine.
 *   POST /v1/chat/completions   streaming (SSE `data: {chunk}` … `data: [DONE]`) or one JSON completion
 *   GET  /v1/models  /health  /info  /metrics
 * Multimodal parts arrive as data-id URLs whose embeddings come from the sidecar, or (with in-process encoders)
 * as plain URLs encoded here; `vllm_xargs` with a
 * hidden-state forward id makes the request prefill-only and sends the prompt's hidden states to the sidecar.
 * Errors use OpenAI's error shape. A client that disconnects cancels its request: its batch slot is freed at
 * the next step boundary.
 */
import express, { type Request, type Response } from 'express';
import { logger, type Logger } from '../../lib/log.js';
import { traceRequests } from '../../lib/telemetry.js';
import type { SidecarClient } from '../../sidecar/client/client.js';
import { tensor } from '../../sidecar/tensor.js';
import { deadlineOf } from '../common/deadline.js';
import { ExecutorErrorCode } from '../../lib/executor-errors.js';
import { processExecution } from '../models/execution.js';
import { describeExecution } from '../models/session-options.js';
import { healthRoute } from '../common/health.js';
import { Engine, type EngineOptions, type EngineRequest } from './engine.js';
import { llmErrors, openAIErrorHandler, toOpenAIError } from './errors.js';
import { HiddenStateStream } from './hidden-stream.js';
import { createLlmMetrics } from './metrics.js';
import type { LlmModel } from './model.js';
import type { InProcessEncoders } from './encoders.js';
import { mediaRefs, resolveEmbeddings } from './multimodal.js';
import { ChunkWriter, completion, completionId, hiddenStatesForward, maxTokensFor, parseExecutorRequest, usage, writeSse, type ExecutorRequest } from './openai.js';
import { buildPrompt, renderChat, type MediaEmbedding, type Prompt } from './prompt.js';
import { hopBodyLimitBytes } from '../../lib/body-limit.js';

export interface LlmServerOptions {
  model: LlmModel;
  engine?: EngineOptions;
  /** The node's sidecar: multimodal embeddings are received and hidden states sent through it. */
  sidecar?: SidecarClient;
  /** Accept multimodal parts whose embeddings come from the sidecar. @default true when a sidecar is given */
  receiveEmbeddings?: boolean;
  /** The model's encoders in this process: plain multimodal URLs are encoded here (encoder fission off). */
  encoders?: InProcessEncoders;
  executorId?: string;
  /** Deadline of a request without an x-cornserve-deadline header. @default 300000 */
  defaultTimeoutMs?: number;
  log?: Logger;
}

export interface LlmServer {
  app: express.Express;
  engine: Engine;
  close(): Promise<void>;
}



export function buildLlmServer(opts: LlmServerOptions): LlmServer {
  const { model, sidecar } = opts;
  const receive = !!sidecar && (opts.receiveEmbeddings ?? true);
  const log = opts.log ?? logger('llm', { executor: opts.executorId });
  const metrics = createLlmMetrics(() => engine.stats());
  const engine = new Engine(model, {
    ...opts.engine,
    log,
    onStep: (kind, batch, ms) => {
      metrics.batchSize.observe({ kind }, batch);
      metrics.stepSeconds.observe({ kind }, ms / 1000);
      opts.engine?.onStep?.(kind, batch, ms);
    },
  });
  let served = 0;
  let receiving = 0;
  const app = express();
  app.set('etag', false); // replies are POST results: hashing each body for an ETag is pure per-request cost
  app.use(traceRequests('llm'));
  app.use(express.json({ limit: hopBodyLimitBytes() })); // what the gateway accepts, this accepts (lib/body-limit.ts)

  app.get('/health', healthRoute([
    { name: 'engine', up: () => engine.alive, code: ExecutorErrorCode.ENGINE_DEAD, message: 'the engine stopped or its decoder steps keep failing' },
  ], { execution: describeExecution(processExecution()) }));
  app.get('/info', (_req, res) => {
    res.json({
      kind: 'llm', executorId: opts.executorId ?? null, model: model.name, modelIds: model.modelIds, tensorParallel: model.tensorParallel,
      modalities: model.modalities, receiveEmbeddings: receive, encoders: opts.encoders?.modalities ?? [], served, receiving, ...engine.stats(),
    });
  });
  app.get('/v1/models', (_req, res) => {
    const created = Math.floor(Date.now() / 1000);
    res.json({ object: 'list', data: model.modelIds.map((id) => ({ id, object: 'model', created, owned_by: 'cornserve', max_model_len: model.config.maxPositions })) });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  app.post('/v1/chat/completions', async (req, res) => {
    const t0 = performance.now();
    const cancel = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) cancel.abort();
    });
    let outcome = 'ok';
    /** The generated tokens' hidden states, when asked for (ended in `finally` if the answer did not finish). */
    let states: HiddenStateStream | undefined;
    let statesClosed = false;
    const closeStates = async () => {
      statesClosed = true;
      await states?.close();
    };
    try {
      const body = parseExecutorRequest(req.body);
      if (!model.modelIds.includes(body.model)) throw llmErrors.modelNotFound(`model ${body.model} is not served here (serves: ${model.modelIds.join(', ')})`);
      if ((body.n ?? 1) !== 1) throw llmErrors.badRequest('only n = 1 is supported', 'n');
      const forward = hiddenStatesForward(body);
      if (forward && !sidecar) throw llmErrors.badRequest('hidden-state forwarding needs a sidecar; this executor has none', 'vllm_xargs');
      const deadline = deadlineOf(req, opts.defaultTimeoutMs ?? 300_000, llmErrors.badDeadline);
      if (forward?.generated) states = new HiddenStateStream(sidecar!, forward.id, forward.dstGroups, deadline);
      const segments = renderChat(model.tokenizer, body.messages);
      const refs = mediaRefs(segments, model.modalities, { receive, encoders: opts.encoders?.modalities ?? [] });
      let media: MediaEmbedding[] = [];
      if (refs.length) {
        receiving++;
        try {
          media = await resolveEmbeddings({ ...(sidecar ? { sidecar } : {}), ...(opts.encoders ? { encoders: opts.encoders } : {}) }, refs, model.config.hidden, deadline, cancel.signal);
        } finally {
          receiving--;
        }
      }
      if (cancel.signal.aborted) return;
      const prompt = buildPrompt(model, segments, media);
      const stop = body.stop === undefined ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
      const base: EngineRequest = {
        prompt, deadline, signal: cancel.signal,
        gen: {
          maxTokens: forward && !forward.generated ? 1 : maxTokensFor(model.config.maxPositions, body, prompt.n, { owner: "this model's" }), temperature: body.temperature ?? 1, topP: body.top_p ?? 1,
          ...(body.seed !== undefined ? { seed: body.seed } : {}), stop: stop.filter((s) => s.length > 0), ignoreEos: body.ignore_eos ?? false,
        },
      };
      metrics.promptTokens.inc(prompt.n);
      const id = completionId();
      if (states) base.tokenHiddenStates = true;
      if (forward && !forward.generated) {
        const r = await engine.submit({ ...base, hiddenStates: true });
        metrics.ttft.observe((performance.now() - t0) / 1000);
        const shape = [prompt.n, model.config.hidden];
        try {
          await sidecar!.send(tensor('f32', shape, r.hidden!), forward.id, forward.dstGroups, { deadline });
        } catch (e) {
          throw llmErrors.sidecar(`sending hidden states ${forward.id} failed: ${(e as Error).message}`, e);
        }
        res.json(completion(id, body.model, '', 'stop', usage(prompt.n, 0), { cornserve_hidden_states: { id: forward.id, shape } }));
        return;
      }
      if (body.stream) {
        const w = new ChunkWriter(id, body.model, body.stream_options?.include_usage ?? false);
        let first = true;
        const pending = engine.submit({
          ...base,
          onToken: (_token, text, hidden) => {
            if (first) metrics.ttft.observe((performance.now() - t0) / 1000);
            first = false;
            metrics.generationTokens.inc();
            if (hidden) states?.push(hidden);
            if (text) writeSse(res, w.content(text));
          },
        });
        res.status(200).set({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
        writeSse(res, w.role()); // the headers leave with it, in one write (the first token comes after a decoder call)
        try {
          const r = await pending;
          await closeStates();
          writeSse(res, w.finish(r.finishReason));
          if (body.stream_options?.include_usage) writeSse(res, w.usage(usage(r.promptTokens, r.tokens.length)));
        } catch (e) {
          if (cancel.signal.aborted) return;
          outcome = toOpenAIError(e).body.error.code;
          writeSse(res, toOpenAIError(e).body);
        }
        writeSse(res, '[DONE]');
        res.end();
        return;
      }
      let first = true;
      const r = await engine.submit({
        ...base,
        onToken: (_token, _text, hidden) => {
          if (first) metrics.ttft.observe((performance.now() - t0) / 1000);
          first = false;
          metrics.generationTokens.inc();
          if (hidden) states?.push(hidden);
        },
      });
      await closeStates();
      res.json(completion(id, body.model, r.text, r.finishReason, usage(r.promptTokens, r.tokens.length)));
    } catch (e) {
      if (cancel.signal.aborted) {
        outcome = 'cancelled';
        return;
      }
      const { status, body } = toOpenAIError(e);
      outcome = body.error.code;
      if (status === 500) log.error({ err: e }, body.error.message);
      else if (status > 500) log.warn({ code: body.error.code }, body.error.message);
      if (!res.headersSent) res.status(status).json(body);
      else res.end();
    } finally {
      if (cancel.signal.aborted) outcome = 'cancelled';
      if (states && !statesClosed) await states.fail(`the LLM request ended without an answer (${outcome})`);
      served++;
      metrics.requests.inc({ outcome });
      metrics.duration.observe((performance.now() - t0) / 1000);
    }
  });

  app.use(openAIErrorHandler(log));

  return { app, engine, close: () => engine.close() };
}
