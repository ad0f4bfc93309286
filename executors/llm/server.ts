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
import { answerChat, llmErrors, openAIErrorHandler, toOpenAIError } from './errors.js';
import { HiddenStateStream } from './hidden-stream.js';
import { createLlmMetrics, type LlmMetrics } from './metrics.js';
import type { LlmModel } from './model.js';
import type { InProcessEncoders } from './encoders.js';
import { mediaRefs, resolveEmbeddings } from './multimodal.js';
import { ChunkWriter, completion, completionId, hiddenStatesForward, maxTokensFor, parseExecutorRequest, sseAnswer, usage, type ExecutorRequest } from './openai.js';
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

/** What the chat route works with, built once per server. */
interface ChatContext {
  opts: LlmServerOptions;
  model: LlmModel;
  engine: Engine;
  metrics: LlmMetrics;
  log: Logger;
  /** Multimodal parts may carry sidecar embeddings. */
  receive: boolean;
  counters: { served: number; receiving: number };
}

export function buildLlmServer(opts: LlmServerOptions): LlmServer {
  const log = opts.log ?? logger('llm', { executor: opts.executorId });
  const metrics = createLlmMetrics(() => engine.stats());
  const engine = startEngine(opts, log, metrics);
  const ctx: ChatContext = {
    opts, model: opts.model, engine, metrics, log, receive: !!opts.sidecar && (opts.receiveEmbeddings ?? true), counters: { served: 0, receiving: 0 },
  };
  const app = express();
  app.set('etag', false); // replies are POST results: hashing each body for an ETag is pure per-request cost
  app.use(traceRequests('llm'));
  app.use(express.json({ limit: hopBodyLimitBytes() })); // what the gateway accepts, this accepts (lib/body-limit.ts)
  addStatusRoutes(app, ctx);
  app.post('/v1/chat/completions', (req, res) => chatRoute(ctx, req, res));
  app.use(openAIErrorHandler(log));
  return { app, engine, close: () => engine.close() };
}

/** The engine, its decoder calls observed by the step metrics (and the caller's own `onStep`). */
function startEngine(opts: LlmServerOptions, log: Logger, metrics: LlmMetrics): Engine {
  return new Engine(opts.model, {
    ...opts.engine,
    log,
    onStep: (kind, batch, ms) => {
      metrics.batchSize.observe({ kind }, batch);
      metrics.stepSeconds.observe({ kind }, ms / 1000);
      opts.engine?.onStep?.(kind, batch, ms);
    },
  });
}

/** GET /health, /info, /v1/models, /metrics. */
function addStatusRoutes(app: express.Express, ctx: ChatContext): void {
  const { model, engine, metrics, opts } = ctx;
  app.get('/health', healthRoute([
    { name: 'engine', up: () => engine.alive, code: ExecutorErrorCode.ENGINE_DEAD, message: 'the engine stopped or its decoder steps keep failing' },
  ], { execution: describeExecution(processExecution()) }));
  app.get('/info', (_req, res) => {
    res.json({
      kind: 'llm', executorId: opts.executorId ?? null, model: model.name, modelIds: model.modelIds, tensorParallel: model.tensorParallel,
      modalities: model.modalities, receiveEmbeddings: ctx.receive, encoders: opts.encoders?.modalities ?? [], ...ctx.counters, ...engine.stats(),
    });
  });
  app.get('/v1/models', (_req, res) => {
    const created = Math.floor(Date.now() / 1000);
    res.json({ object: 'list', data: model.modelIds.map((id) => ({ id, object: 'model', created, owned_by: 'cornserve', max_model_len: model.config.maxPositions })) });
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
}

/** A chat request checked and turned into an engine request (media resolved, prompt built). */
interface PreparedChat {
  body: ExecutorRequest;
  forward: ReturnType<typeof hiddenStatesForward>;
  deadline: number;
  prompt: Prompt;
  base: EngineRequest;
}

/** The generated tokens' hidden states, when asked for (ended by the route if the answer did not finish). */
interface TokenStates {
  stream?: HiddenStateStream;
  closed: boolean;
}

async function chatRoute(ctx: ChatContext, req: Request, res: Response): Promise<void> {
  const states: TokenStates = { closed: false };
  const settle = async (outcome: string) => {
    if (states.stream && !states.closed) await states.stream.fail(`the LLM request ended without an answer (${outcome})`);
    ctx.counters.served++;
  };
  await answerChat(res, { metrics: ctx.metrics, log: ctx.log, settle }, async (signal, t0) => {
    const chat = await prepareChat(ctx, req, signal, states);
    if (!chat) return;
    ctx.metrics.promptTokens.inc(chat.prompt.n);
    if (chat.forward && !chat.forward.generated) return answerPromptStates(ctx, chat, res, t0);
    if (chat.body.stream) return streamAnswer(ctx, chat, res, t0, states, signal);
    return completeAnswer(ctx, chat, res, t0, states);
  });
}

/** Checks the request, resolves its media and builds the prompt; undefined when the client left meanwhile. */
async function prepareChat(ctx: ChatContext, req: Request, signal: AbortSignal, states: TokenStates): Promise<PreparedChat | undefined> {
  const { model, opts } = ctx;
  const { sidecar } = opts;
  const body = parseExecutorRequest(req.body);
  if (!model.modelIds.includes(body.model)) throw llmErrors.modelNotFound(`model ${body.model} is not served here (serves: ${model.modelIds.join(', ')})`);
  if ((body.n ?? 1) !== 1) throw llmErrors.badRequest('only n = 1 is supported', 'n');
  const forward = hiddenStatesForward(body);
  if (forward && !sidecar) throw llmErrors.badRequest('hidden-state forwarding needs a sidecar; this executor has none', 'vllm_xargs');
  const deadline = deadlineOf(req, opts.defaultTimeoutMs ?? 300_000, llmErrors.badDeadline);
  if (forward?.generated) states.stream = new HiddenStateStream(sidecar!, forward.id, forward.dstGroups, deadline);
  const segments = renderChat(model.tokenizer, body.messages);
  const refs = mediaRefs(segments, model.modalities, { receive: ctx.receive, encoders: opts.encoders?.modalities ?? [] });
  let media: MediaEmbedding[] = [];
  if (refs.length) {
    ctx.counters.receiving++;
    try {
      media = await resolveEmbeddings({ ...(sidecar ? { sidecar } : {}), ...(opts.encoders ? { encoders: opts.encoders } : {}) }, refs, model.config.hidden, deadline, signal);
    } finally {
      ctx.counters.receiving--;
    }
  }
  if (signal.aborted) return undefined;
  const prompt = buildPrompt(model, segments, media);
  const stop = body.stop === undefined ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  const base: EngineRequest = {
    prompt, deadline, signal,
    gen: {
      maxTokens: forward && !forward.generated ? 1 : maxTokensFor(model.config.maxPositions, body, prompt.n, { owner: "this model's" }), temperature: body.temperature ?? 1, topP: body.top_p ?? 1,
      ...(body.seed !== undefined ? { seed: body.seed } : {}), stop: stop.filter((s) => s.length > 0), ignoreEos: body.ignore_eos ?? false,
    },
    ...(states.stream ? { tokenHiddenStates: true } : {}),
  };
  return { body, forward, deadline, prompt, base };
}

/** Per token: the first-token and token metrics, and the token's hidden state to its stream. */
function observeTokens(ctx: ChatContext, t0: number, states: TokenStates): (hidden: Float32Array | undefined) => void {
  let first = true;
  return (hidden) => {
    if (first) ctx.metrics.ttft.observe((performance.now() - t0) / 1000);
    first = false;
    ctx.metrics.generationTokens.inc();
    if (hidden) states.stream?.push(hidden);
  };
}

async function closeStates(states: TokenStates): Promise<void> {
  states.closed = true;
  await states.stream?.close();
}

/** Prefill only: the prompt's hidden states go to the sidecar; the reply is an empty completion naming them. */
async function answerPromptStates(ctx: ChatContext, chat: PreparedChat, res: Response, t0: number): Promise<void> {
  const { forward, prompt, body, deadline } = chat;
  const r = await ctx.engine.submit({ ...chat.base, hiddenStates: true });
  ctx.metrics.ttft.observe((performance.now() - t0) / 1000);
  const shape = [prompt.n, ctx.model.config.hidden];
  try {
    await ctx.opts.sidecar!.send(tensor('f32', shape, r.hidden!), forward!.id, forward!.dstGroups, { deadline });
  } catch (e) {
    throw llmErrors.sidecar(`sending hidden states ${forward!.id} failed: ${(e as Error).message}`, e);
  }
  res.json(completion(completionId(), body.model, '', 'stop', usage(prompt.n, 0), { cornserve_hidden_states: { id: forward!.id, shape } }));
}

/** SSE: the role chunk, one chunk per token with text, the finish (and usage) chunk, `[DONE]`; returns the outcome. */
async function streamAnswer(ctx: ChatContext, chat: PreparedChat, res: Response, t0: number, states: TokenStates, signal: AbortSignal): Promise<string> {
  const { body } = chat;
  const w = new ChunkWriter(completionId(), body.model, body.stream_options?.include_usage ?? false);
  const send = sseAnswer(res, w);
  const observe = observeTokens(ctx, t0, states);
  const pending = ctx.engine.submit({
    ...chat.base,
    onToken: (_token, text, hidden) => {
      observe(hidden);
      if (text) send(w.content(text));
    },
  });
  res.status(200).set({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  let outcome = 'ok';
  try {
    const r = await pending;
    await closeStates(states);
    send(w.finish(r.finishReason));
    if (body.stream_options?.include_usage) send(w.usage(usage(r.promptTokens, r.tokens.length)));
  } catch (e) {
    if (signal.aborted) return 'cancelled';
    const err = toOpenAIError(e).body;
    outcome = err.error.code;
    send(err);
  }
  send('[DONE]');
  res.end();
  return outcome;
}

/** One JSON completion after the last token. */
async function completeAnswer(ctx: ChatContext, chat: PreparedChat, res: Response, t0: number, states: TokenStates): Promise<void> {
  const observe = observeTokens(ctx, t0, states);
  const r = await ctx.engine.submit({ ...chat.base, onToken: (_token, _text, hidden) => observe(hidden) });
  await closeStates(states);
  res.json(completion(completionId(), chat.body.model, r.text, r.finishReason, usage(r.promptTokens, r.tokens.length)));
}
