/**
 * POST /embeddings: `{data: [{id, modality, model_id, url, receiver_sidecar_ranks}], return_embeddings?}` →
 *   200 `{status: 0}` once every item's forward pass ran and its sidecar send was submitted; with
 *   `return_embeddings: true` also `embeddings: [{id, shape: [rows, cols], data: number[] (row-major)}]` in item order;
 *   400 `Unsupported model ID` / `Unsupported modality` (the whole request, before any work);
 *   4xx/5xx with per-item errors (`error.details.items`) when items fail: a corrupt or oversized input, a URL
 *   that fails or times out, a model error, a failed send. Items of a failed request are not run (when the
 *   failure is found before the engine) and their ids are failed on the sidecar, which frees whatever was
 *   already sent and wakes their consumers, so no sidecar memory is left behind. The body keeps the
 *   reference's `{status: 1, error_message}` next to our `{error: {code, message, details}}`.
 */
import { z } from 'zod';
import { parseOr422 } from '../../../lib/http.js';
import type { EngineClient } from '../../common/engine-client.js';
import { toWire, type WireError } from '../../../lib/executor-errors.js';
import type { PreprocessPool } from '../../common/preprocess-pool.js';
import type { Item, ItemResult } from '../../../lib/executor-protocol.js';
import { ericError } from '../errors.js';
import type { EricMetrics } from '../metrics.js';
import type { CompiledEricOptions } from '../options.js';
import type { ForwardedBytes } from '../worker/in-place.js';
import type { ForwardedMeta, ItemMeta } from '../worker/worker.js';
import type { PreprocessInput, PreprocessOutput } from './preprocess-worker.js';
import { loadUrl, type UrlLoaderOptions } from './url-loader.js';

const EmbeddingData = z.object({
  id: z.string().min(1),
  modality: z.string().min(1),
  model_id: z.string().min(1),
  url: z.string().min(1),
  receiver_sidecar_ranks: z.array(z.array(z.number().int().nonnegative()).min(1)).min(1).nullable().optional(),
});
/** Items per request: far above what a task graph sends, low enough that one request cannot queue unbounded work. */
export const MAX_ITEMS_PER_REQUEST = 1024;
export const EmbeddingRequest = z.object({
  data: z.array(EmbeddingData).min(1).max(MAX_ITEMS_PER_REQUEST),
  /** Also answer each item's embedding as JSON (`embeddings: [{id, shape, data}]`), e.g. for an embedding app. */
  return_embeddings: z.boolean().default(false),
});
export type EmbeddingData = z.infer<typeof EmbeddingData>;

export interface Forward { id: string; receivers: number[][] }

export interface EmbeddingDeps {
  options: CompiledEricOptions;
  engine: Pick<EngineClient, 'enqueue'>;
  preprocess: PreprocessPool<PreprocessInput, PreprocessOutput>;
  /** Fails these ids on the sidecar (frees anything sent, wakes consumers); undefined when there is no sidecar. */
  failForwards?: (forwards: Forward[], reason: string) => Promise<void>;
  metrics: EricMetrics;
}

export interface CallContext { deadline: number; signal: AbortSignal; traceparent?: string }

export interface HttpAnswer { status: number; body: unknown }

const OK: HttpAnswer = { status: 200, body: { status: 0 } };

/** Per-item outcome in an error answer. */
interface ItemOutcome { id: string; ok: boolean; code?: string; message?: string; status?: number }

function failure(outcomes: ItemOutcome[], requestError?: WireError): HttpAnswer {
  const failed = outcomes.filter((o) => !o.ok);
  const first = requestError ?? { code: failed[0]!.code!, message: failed[0]!.message!, status: failed[0]!.status! };
  const worst = Math.max(first.status, ...failed.map((f) => (f.status! >= 500 ? f.status! : 0)));
  const message = requestError
    ? requestError.message
    : failed.map((f) => `item ${f.id}: ${f.message}`).join('; ');
  return {
    status: worst,
    body: { status: 1, error_message: message, error: { code: first.code, message, details: { items: outcomes } } },
  };
}

const outcome = (id: string, e: WireError | undefined): ItemOutcome =>
  (e ? { id, ok: false, code: e.code, message: e.message, status: e.status } : { id, ok: true });

/** Checks the whole request against what this Eric serves (reference: 400 before any work). */
function checkServed(data: EmbeddingData[], o: CompiledEricOptions, hasSidecar: boolean): void {
  const ids = new Set<string>();
  for (const d of data) {
    if (!o.modelIds.includes(d.model_id)) {
      throw ericError('ERIC_UNSUPPORTED_MODEL_ID', `Unsupported model ID: ${d.model_id} (this encoder serves ${o.modelIds.join(', ')})`);
    }
    if (d.modality !== o.modality) throw ericError('ERIC_UNSUPPORTED_MODALITY', `Unsupported modality: ${d.modality} (this encoder serves ${o.modality})`);
    if (ids.has(d.id)) throw ericError('ERIC_DUPLICATE_ID', `item id ${d.id} appears twice in one request`);
    ids.add(d.id);
    if (d.receiver_sidecar_ranks && !hasSidecar) {
      throw ericError('ERIC_NO_SIDECAR', `item ${d.id} has receivers but this Eric has no sidecar (CORNSERVE_SIDECAR_URL is not set)`);
    }
  }
}

/** An item's embedding as JSON (the worker's `embedding` tensor, f32 [rows, cols]). */
function returned(r: ItemResult): { id: string; shape: number[]; data: number[] } {
  const t = r.tensors?.embedding;
  if (!t) throw new Error(`the worker returned no embedding for item ${r.id}`);
  return { id: r.id, shape: [...t.shape], data: Array.from(t.data as Float32Array) };
}

/** Loads the item's URL and preprocesses it in the pool: the engine-ready item. */
async function prepare(d: EmbeddingData, ctx: CallContext, deps: EmbeddingDeps, loader: UrlLoaderOptions, returnEmbedding: boolean): Promise<Item> {
  const { metrics, options } = deps;
  const endLoad = metrics.stage.startTimer({ stage: 'load' });
  const loaded = await loadUrl(d.url, loader, ctx.signal);
  endLoad();
  // Buffers owned by one part move to the thread; pooled ones (small base64 decodes) are copied instead.
  const transfer = loaded.parts.filter((p) => p.byteOffset === 0 && p.byteLength === p.buffer.byteLength).map((p) => p.buffer as ArrayBuffer);
  const endPre = metrics.stage.startTimer({ stage: 'preprocess' });
  const out = await deps.preprocess.run({ modality: options.modality, parts: loaded.parts }, { transfer, deadline: ctx.deadline, signal: ctx.signal });
  endPre();
  const meta: ItemMeta = {
    ...(out.meta as Partial<ItemMeta>), modality: options.modality, modelId: d.model_id, receivers: d.receiver_sidecar_ranks ?? null, deadline: ctx.deadline,
    ...(returnEmbedding ? { returnEmbedding } : {}),
    ...(ctx.traceparent ? { traceparent: ctx.traceparent } : {}),
  };
  return { id: d.id, meta: meta as unknown as Record<string, unknown>, tensors: out.tensors };
}

export async function embed(body: unknown, ctx: CallContext, deps: EmbeddingDeps): Promise<HttpAnswer> {
  const { data, return_embeddings: returnEmbeddings } = parseOr422(EmbeddingRequest, body, 'embedding request');
  checkServed(data, deps.options, deps.failForwards !== undefined);
  const forwards: Forward[] = data.filter((d) => d.receiver_sidecar_ranks).map((d) => ({ id: d.id, receivers: d.receiver_sidecar_ranks! }));
  const loader: UrlLoaderOptions = {
    maxBytes: deps.options.maxInputBytes, timeoutMs: deps.options.fetchTimeoutMs, allowFile: deps.options.allowFileUrls, allowHosts: deps.options.urlAllowlist,
    allowPrivate: deps.options.privateUrlAllowlist,
  };
  const fail = async (answer: HttpAnswer, reason: string) => {
    if (forwards.length) await deps.failForwards?.(forwards, reason).catch(() => undefined);
    return answer;
  };

  const prepared = await Promise.allSettled(data.map((d) => prepare(d, ctx, deps, loader, returnEmbeddings)));
  const prepErrors = prepared.map((p) => (p.status === 'rejected' ? toWire(p.reason) : undefined));
  if (prepErrors.some(Boolean)) {
    const outcomes = data.map((d, i) => outcome(d.id, prepErrors[i]));
    count(deps.metrics, outcomes);
    return fail(failure(outcomes), 'the request failed before the forward pass');
  }

  const items = prepared.map((p) => (p as PromiseFulfilledResult<Item>).value);
  const endEngine = deps.metrics.stage.startTimer({ stage: 'engine' });
  let results: ItemResult[];
  let requestError: WireError | undefined;
  try {
    const r = await deps.engine.enqueue(items, { deadline: ctx.deadline, signal: ctx.signal, ...(ctx.traceparent ? { traceparent: ctx.traceparent } : {}) });
    results = r.items;
    requestError = r.error && toWire(r.error);
  } catch (e) {
    results = [];
    requestError = toWire(e);
  } finally {
    endEngine();
  }
  const byId = new Map(results.map((r) => [r.id, r]));
  for (const r of results) {
    if (typeof r.meta?.batchSize === 'number') deps.metrics.batchSize.observe(r.meta.batchSize);
    countForwarded(deps.metrics, (r.meta as ForwardedMeta | undefined)?.forwarded);
  }
  const outcomes = data.map((d) => outcome(d.id, requestError ?? byId.get(d.id)?.error));
  count(deps.metrics, outcomes);
  if (!requestError && outcomes.every((o) => o.ok)) return returnEmbeddings ? { status: 200, body: { status: 0, embeddings: data.map((d) => returned(byId.get(d.id)!)) } } : OK;
  return fail(failure(outcomes, requestError), requestError?.message ?? 'an item of the request failed');
}

function count(m: EricMetrics, outcomes: ItemOutcome[]): void {
  for (const o of outcomes) m.items.inc({ outcome: o.ok ? 'ok' : o.code! });
}

/** The bytes an item's send added to the worker's SidecarClient.sent, by path. */
function countForwarded(m: EricMetrics, f: ForwardedBytes | undefined): void {
  if (f?.inPlaceBytes) m.forwardedBytes.inc({ path: 'in_place' }, f.inPlaceBytes);
  if (f?.copiedBytes) m.forwardedBytes.inc({ path: 'copied' }, f.copiedBytes);
}
