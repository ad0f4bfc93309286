/**
 * Eric fixture: a REAL Eric process (`node --import tsx executors/eric/main.ts ...`) on a free port, with its
 * engine child process and worker threads, optionally connected to a sidecar from test/helpers/sidecar.ts.
 *
 *   const eric = await startEric({ modality: 'image', ranks: [0], sidecarSocket: sc.nodeOf(0).socketPath });
 *   const res = await eric.embed([{ id, modality: 'image', model_id: Eric.A, url, receiver_sidecar_ranks: [[1]] }]);
 *   await eric.stop();
 */
import type { ChildProcess } from 'node:child_process';
import type { SidecarClient } from '../../sidecar/client/client.js';
import { type LoadedModel, loadModel } from '../../executors/models/loader.js';
import { type SidecarCluster, startSidecars } from './sidecar.js';
import type { Tensor } from '../../sidecar/tensor.js';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { modelDir, modelsDir } from './models.js';
import { startServerProcess } from './server-process.js';

export const TINY_A = 'cornserve/tiny-vlm-a';
export const TINY_B = 'cornserve/tiny-vlm-b';

export interface EricFixtureOptions {
  modality: 'image' | 'video' | 'audio';
  /** Start from a descriptor's launch spec (its entry and args) instead of the options below. */
  launch?: { entry: string; args: string[] };
  modelId?: string;
  adapterModelIds?: string[];
  /** Sidecar ranks (CORNSERVE_SIDECAR_RANKS); their count is the TP degree. @default [0] */
  ranks?: number[];
  sidecarSocket?: string;
  maxBatchSize?: number;
  /** @default the project's built models */
  modelsDir?: string;
  args?: string[];
  /** Extra environment, e.g. the platform's device variables. */
  env?: Record<string, string>;
  /** @default 60000 */
  startTimeoutMs?: number;
}

export interface EmbeddingItem { id: string; modality: string; model_id: string; url: string; receiver_sidecar_ranks?: number[][] | null }

export interface EricFixture {
  readonly url: string;
  readonly process: ChildProcess;
  embed(data: EmbeddingItem[], headers?: Record<string, string>): Promise<{ status: number; body: any }>;
  info(): Promise<any>;
  health(): Promise<number>;
  /** SIGTERM and wait (engine and workers go with it); idempotent. */
  stop(): Promise<void>;
}

export async function startEric(o: EricFixtureOptions): Promise<EricFixture> {
  const [entry, ...model] = o.launch ? [o.launch.entry, ...o.launch.args] : [
    'executors/eric/main.ts', '--model-id', o.modelId ?? TINY_A, '--modality', o.modality,
    ...(o.adapterModelIds?.length ? ['--adapter-model-ids', o.adapterModelIds.join(',')] : []),
    ...(o.maxBatchSize ? ['--max-batch-size', String(o.maxBatchSize)] : []),
  ];
  const p = await startServerProcess({
    what: 'eric',
    entry: entry!,
    args: [...model, '--models-dir', o.modelsDir ?? await modelsDir(), '--preprocess-threads', '1', ...(o.args ?? [])],
    env: { [EXECUTOR_ENV.ranks]: (o.ranks ?? [0]).join(','), ...(o.sidecarSocket ? { [EXECUTOR_ENV.sidecar]: o.sidecarSocket } : {}), ...o.env },
    ...(o.startTimeoutMs ? { startTimeoutMs: o.startTimeoutMs } : {}),
  });
  const { url } = p;
  return {
    url,
    process: p.child,
    async embed(data, headers = {}) {
      const res = await fetch(`${url}/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ data }) });
      return { status: res.status, body: await res.json() };
    },
    info: async () => (await fetch(`${url}/info`)).json(),
    health: p.health,
    stop: p.stop,
  };
}

export interface ForwardingEric {
  sc: SidecarCluster;
  eric: EricFixture;
  /** A client of the receiving rank (the last rank of `nodes`' one node). */
  consumer: SidecarClient;
  /** The tiny-vision model loaded in this process, for direct runs to compare with. */
  direct: LoadedModel;
  stop(): Promise<void>;
}

/**
 * An image Eric on sidecar ranks `ranks` of one node whose last rank is a consumer, and the same model loaded here
 * for direct runs: what the forwarding tests compare.
 *
 *   const f = await startForwardingEric({ ranks: [0, 1], consumer: 2, adapterModelIds: [TINY_B] });
 */
export async function startForwardingEric(o: { ranks: number[]; consumer: number; adapterModelIds?: string[] }): Promise<ForwardingEric> {
  const sc = await startSidecars({ nodes: [[...o.ranks, o.consumer]] });
  const eric = await startEric({ modality: 'image', ...(o.adapterModelIds ? { adapterModelIds: o.adapterModelIds } : {}), ranks: o.ranks, sidecarSocket: sc.nodeOf(o.ranks[0]!).socketPath });
  const consumer = await sc.client(o.consumer);
  const direct = await loadModel(await modelDir('tiny-vision'), { sessionOptions: { intraOpNumThreads: 1 } });
  return {
    sc, eric, consumer, direct,
    async stop() {
      await eric.stop();
      await sc.stop();
      await direct.close();
    },
  };
}

/** A data: URL of `bytes` with media type `mime` (the bench workload's). */
export { dataUrl } from '../../bench/workload/media.js';

/** Receives chunk 0 of `id` at `consumer`, copies it out of shared memory and marks it done. */
export async function receiveEmbedding(consumer: SidecarClient, id: string, timeoutMs = 20_000): Promise<Tensor> {
  const t = (await consumer.recv(id, 0, { timeoutMs })) as Tensor;
  const copy = { ...t, shape: [...t.shape], data: t.data.slice() };
  await consumer.markDone(id, 0);
  return copy;
}

/** Eric's eric_forwarded_bytes_total by path, from its /metrics (0 for a path not seen yet). */
export async function forwardedBytes(eric: Pick<EricFixture, 'url'>): Promise<{ inPlace: number; copied: number }> {
  const text = await (await fetch(`${eric.url}/metrics`)).text();
  const of = (path: string) => Number(new RegExp(`^eric_forwarded_bytes_total\\{[^}]*path="${path}"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  return { inPlace: of('in_place'), copied: of('copied') };
}

/** Largest element-wise difference of two equally long arrays. */
export const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};
