/**
 * Geri's router: the HTTP side (the reference's router.py + engine client).
 *   POST /image/generate {embedding_data_id, height, width, num_inference_steps?, skip_tokens?} → {status: 0, generated}
 *   POST /audio/generate {embedding_data_id, chunk_size?, left_context_size?} → SSE of base64 PCM16 chunks
 *   GET /health (503 once the engine is gone), /info, /metrics
 * Flow per request: validate (limits from the manifest) → image: receive all embedding chunks from the sidecar
 * (bounded by the request deadline, x-cornserve-deadline) and free them → enqueue one item to the engine,
 * which batches it with compatible requests → answer; audio: receive the chunks as they come (a producer may
 * stream them) and enqueue each run of complete chunk windows as one item, streaming its PCM as it is made. A request rejected before it read its embeddings still
 * frees them (received in the background). A client that goes away cancels its request in the engine.
 */
import { randomUUID } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import { errorHandler, parseOr422 } from '../../../lib/http.js';
import { type Logger, logger } from '../../../lib/log.js';
import { currentTraceparent, traceRequests } from '../../../lib/telemetry.js';
import type { SidecarClient } from '../../../sidecar/client/client.js';
import { deadlineOf } from '../../common/deadline.js';
import type { EngineResponse, EnqueueOptions } from '../../common/engine-client.js';
import { ExecutorErrorCode, executorError, fromWire } from '../../../lib/executor-errors.js';
import { processExecution } from '../../models/execution.js';
import { describeExecution } from '../../models/session-options.js';
import { type HealthPart, healthRoute } from '../../common/health.js';
import { type Item, type ItemResult, tensor } from '../../../lib/executor-protocol.js';
import { discardTensor } from '../../common/receive-tensor.js';
import type { Manifest } from '../../models/manifest.js';
import { GeriErrorCode, geriError } from '../errors.js';
import { type AudioParams, EMBEDDINGS, type GenParams, type ImageParams, type Modality, PCM16, PNG } from '../../../lib/geri-protocol.js';
import { AudioSegmenter } from './audio-segments.js';
import { receiveEmbeddingChunks, receiveEmbeddings } from './embeddings.js';
import { createGeriMetrics, type GeriMetrics } from './metrics.js';
import { AudioEventStream, sendError, sendImage } from './replies.js';
import { audioRequestSchema, dataIdOf, imageRequestSchema } from './requests.js';
import { hopBodyLimitBytes } from '../../../lib/body-limit.js';

/** The engine as the router sees it (EngineProcess + its EngineClient in main.ts). */
export interface GeriEngineHandle {
  /** The engine process's part of /health (down when it exited or hung). */
  readonly health: HealthPart;
  /** The engine process's pid (shown in /info). */
  readonly pid?: number;
  enqueue(items: readonly Item[], o: EnqueueOptions): Promise<EngineResponse>;
}

export interface GeriServerOptions {
  engine: GeriEngineHandle;
  /** The generator model's manifest (hidden size, size limits, defaults). */
  manifest: Manifest;
  modelId: string;
  modality: Modality;
  /** The node's sidecar; without one every generation request fails with GERI_NO_SIDECAR. */
  sidecar?: SidecarClient;
  maxBatchSize?: number;
  executorId?: string;
  /** Deadline of a request without an x-cornserve-deadline header. @default 300000 */
  defaultTimeoutMs?: number;
  log?: Logger;
}

export interface GeriServer {
  app: express.Express;
  metrics: GeriMetrics;
}

/** The item's result, or the error that failed it (the item's own, else the request's). */
function resultOf(r: EngineResponse): ItemResult {
  const it = r.items[0];
  if (it?.ok) return it;
  throw it?.error ? fromWire(it.error) : (r.error ?? executorError(ExecutorErrorCode.INTERNAL, 'the engine returned no result'));
}

/** What every step of a request reads: the options, the model's shape, the metrics and the live counters. */
interface GeriContext {
  o: GeriServerOptions;
  log: Logger;
  defaultTimeoutMs: number;
  hidden: number;
  imageSchema?: ReturnType<typeof imageRequestSchema>;
  metrics: GeriMetrics;
  counters: { inflight: number; receiving: number; served: Record<string, number> };
}

/** Checks that the model serves the model id and generates the modality; the metrics read the live counters. */
function geriContext(o: GeriServerOptions): GeriContext {
  const log = o.log ?? logger('geri', { executor: o.executorId });
  const hidden = o.manifest.model_ids[o.modelId]?.hidden_size;
  if (hidden === undefined) throw new Error(`model '${o.manifest.name}' does not serve model id '${o.modelId}'`);
  const imageGen = o.manifest.generation.image;
  const imageSchema = o.modality === 'image' && imageGen ? imageRequestSchema(imageGen) : undefined;
  if (o.modality === 'image' && !imageSchema) throw new Error(`model '${o.manifest.name}' is not an image generator`);
  if (o.modality === 'audio' && !o.manifest.generation.audio) throw new Error(`model '${o.manifest.name}' is not an audio generator`);
  const counters = { inflight: 0, receiving: 0, served: {} as Record<string, number> };
  const metrics = createGeriMetrics({ inflight: () => counters.inflight, receiving: () => counters.receiving }, o.executorId ? { executor: o.executorId } : {});
  return { o, log, defaultTimeoutMs: o.defaultTimeoutMs ?? 300_000, hidden, ...(imageSchema ? { imageSchema } : {}), metrics, counters };
}

/** Validates the body into the engine's generation parameters. */
function paramsOf(ctx: GeriContext, route: Modality, body: unknown): { dataId: string; params: GenParams } {
  if (route !== ctx.o.modality) throw geriError(GeriErrorCode.WRONG_MODALITY, `this Geri generates ${ctx.o.modality}; POST /${ctx.o.modality}/generate`);
  if (route === 'image') {
    const b = parseOr422(ctx.imageSchema!, body, 'image generation request');
    return {
      dataId: b.embedding_data_id,
      params: { kind: 'image', height: b.height, width: b.width, numInferenceSteps: b.num_inference_steps, skipTokens: b.skip_tokens },
    };
  }
  const b = parseOr422(audioRequestSchema, body, 'audio generation request');
  return {
    dataId: b.embedding_data_id,
    params: { kind: 'audio', ...(b.chunk_size !== undefined ? { chunkSize: b.chunk_size } : {}), ...(b.left_context_size !== undefined ? { leftContextSize: b.left_context_size } : {}) },
  };
}

/**
 * Audio from a stream of embeddings: rows are received chunk by chunk (an LLM sends one per generated token)
 * and every complete chunk window is vocoded as soon as its rows are in (AudioSegmenter), so audio comes out
 * while the producer still produces; a one-chunk input is the same with a single receive. The receive runs to
 * the end of the stream whatever happens here (every chunk is freed), bounded by the deadline.
 */
async function generateAudioStream(
  ctx: GeriContext, dataId: string, params: AudioParams, deadline: number, enqueue: EnqueueOptions, signal: AbortSignal, onPcm: (pcm: Uint8Array) => void,
): Promise<void> {
  const { o, hidden, metrics, counters } = ctx;
  const audioGen = o.manifest.generation.audio!;
  const seg = new AudioSegmenter(hidden, params.chunkSize ?? audioGen.default_chunk_size, params.leftContextSize ?? audioGen.default_left_context_size);
  let ended = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const tr = performance.now();
  counters.receiving++;
  signal.addEventListener('abort', () => wake?.(), { once: true });
  void (async () => {
    try {
      for await (const rows of receiveEmbeddingChunks(o.sidecar, dataId, hidden, deadline)) {
        if (seg.rows === 0) metrics.receive.observe((performance.now() - tr) / 1000);
        metrics.embeddingBytes.inc(rows.byteLength);
        seg.push(rows);
        wake?.();
      }
    } catch (e) {
      failure = e;
    } finally {
      ended = true;
      counters.receiving--;
      wake?.();
    }
  })();
  let batch = 0;
  for (;;) {
    const segment = failure === undefined ? seg.take(ended) : undefined;
    if (failure !== undefined) throw failure;
    if (signal.aborted) return;
    if (!segment) {
      if (ended) break;
      await new Promise<void>((r) => (wake = r));
      wake = undefined;
      continue;
    }
    const item: Item = {
      id: randomUUID(),
      meta: { ...params, startFrame: segment.startFrame, embeddingDataId: dataId },
      tensors: { [EMBEDDINGS]: tensor('float32', [segment.rows, hidden], segment.data) },
    };
    const r = resultOf(await o.engine.enqueue([item], {
      ...enqueue,
      onStream: (e) => {
        const pcm = e.tensors[PCM16];
        if (pcm && !signal.aborted) onPcm(pcm.data as Uint8Array);
      },
    }));
    batch = Math.max(batch, Number(r.meta?.batchSize ?? 1));
  }
  metrics.batchSize.observe(batch || 1);
}

/** Receives the embeddings whole, generates one image and sends it; 'cancelled' when the client left meanwhile. */
async function generateImage(ctx: GeriContext, res: Response, dataId: string, params: ImageParams, deadline: number, enqueue: EnqueueOptions, signal: AbortSignal): Promise<string> {
  const { o, hidden, metrics, counters } = ctx;
  const tr = performance.now();
  counters.receiving++;
  const emb = await receiveEmbeddings(o.sidecar, dataId, hidden, deadline).finally(() => { counters.receiving--; });
  metrics.receive.observe((performance.now() - tr) / 1000);
  metrics.embeddingBytes.inc(emb.data.byteLength);
  if (params.skipTokens >= emb.rows) {
    throw geriError(GeriErrorCode.EMBEDDINGS_INVALID, `skip_tokens ${params.skipTokens} leaves no rows of the ${emb.rows} embedding rows`, { rows: emb.rows });
  }
  if (signal.aborted) return 'cancelled';
  const item: Item = {
    id: randomUUID(),
    meta: { ...params, embeddingDataId: dataId },
    tensors: { [EMBEDDINGS]: tensor('float32', [emb.rows, emb.cols], emb.data) },
  };
  const r = resultOf(await o.engine.enqueue([item], enqueue));
  metrics.batchSize.observe(Number(r.meta?.batchSize ?? 1));
  sendImage(res, r.tensors![PNG]!.data as Uint8Array);
  return 'ok';
}

/** The request's deadline and parameters; a request rejected here still frees the embeddings its producer sends. */
function admit(ctx: GeriContext, route: Modality, req: Request): { deadline: number; dataId: string; params: GenParams } {
  let deadline = Date.now() + ctx.defaultTimeoutMs;
  try {
    deadline = deadlineOf(req, ctx.defaultTimeoutMs, (m) => geriError(GeriErrorCode.BAD_DEADLINE, m));
    return { deadline, ...paramsOf(ctx, route, req.body) };
  } catch (e) {
    const id = dataIdOf(req.body);
    if (id && ctx.o.sidecar) discardTensor(ctx.o.sidecar, id, deadline);
    throw e;
  }
}

/** POST /{route}/generate: admit, generate (audio streamed as SSE), count the outcome; a client that leaves cancels. */
const generateRoute = (ctx: GeriContext, route: Modality) => async (req: Request, res: Response) => {
  const { metrics, counters } = ctx;
  const t0 = performance.now();
  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  counters.inflight++;
  let outcome = 'ok';
  let stream: AudioEventStream | undefined;
  try {
    const { deadline, dataId, params } = admit(ctx, route, req);
    const traceparent = currentTraceparent();
    const enqueue: EnqueueOptions = { deadline, signal: gone.signal, ...(traceparent ? { traceparent } : {}) };
    if (params.kind === 'image') {
      outcome = await generateImage(ctx, res, dataId, params, deadline, enqueue, gone.signal);
      return;
    }
    const s = (stream = new AudioEventStream(res));
    await generateAudioStream(ctx, dataId, params, deadline, enqueue, gone.signal, (pcm) => {
      metrics.audioChunks.inc();
      s.chunk(pcm);
    });
    if (gone.signal.aborted) {
      outcome = 'cancelled';
      return;
    }
    s.done();
  } catch (e) {
    if (gone.signal.aborted) {
      outcome = 'cancelled';
      return;
    }
    outcome = stream?.started ? stream.fail(e) : sendError(res, e);
    if (outcome.startsWith('EXECUTOR_') || outcome === 'INTERNAL') ctx.log.warn({ err: (e as Error).message, route }, 'generation failed');
  } finally {
    counters.inflight--;
    counters.served[outcome] = (counters.served[outcome] ?? 0) + 1;
    metrics.requests.inc({ route, outcome });
    metrics.duration.observe({ route }, (performance.now() - t0) / 1000);
  }
};

/** GET /info: what this Geri serves and its live counters. */
function info(ctx: GeriContext) {
  const { o, hidden, counters } = ctx;
  return {
    kind: 'geri', executorId: o.executorId ?? null, enginePid: o.engine.pid ?? null, modelId: o.modelId, model: o.manifest.name, modality: o.modality, hiddenSize: hidden,
    maxBatchSize: o.maxBatchSize ?? null, sidecar: !!o.sidecar, limits: o.modality === 'image' ? o.manifest.generation.image : o.manifest.generation.audio,
    inflight: counters.inflight, receiving: counters.receiving, served: counters.served,
  };
}

export function buildGeriServer(o: GeriServerOptions): GeriServer {
  const ctx = geriContext(o);
  const { metrics } = ctx;
  const app = express();
  app.set('etag', false); // replies are POST results: hashing each body for an ETag is pure per-request cost
  app.use(traceRequests('geri'));
  app.use(express.json({ limit: hopBodyLimitBytes() })); // what the gateway accepts, this accepts (lib/body-limit.ts)
  app.get('/health', healthRoute([o.engine.health], { execution: describeExecution(processExecution()) }));
  app.get('/info', (_req, res) => {
    res.json(info(ctx));
  });
  app.get('/metrics', async (_req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
  app.post('/image/generate', generateRoute(ctx, 'image'));
  app.post('/audio/generate', generateRoute(ctx, 'audio'));
  app.use(errorHandler(ctx.log));
  return { app, metrics };
}
