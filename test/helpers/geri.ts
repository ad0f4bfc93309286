/**
 * Geri fixture: a REAL Geri (`node --import tsx executors/geri/main.ts`, router + engine process + worker thread)
 * on a free port, attached to a test sidecar node, plus helpers to feed it embeddings the way an encoder would.
 *
 *   const sc = await startSidecars({ nodes: [[0, 1]] });
 *   const geri = await startGeri({ modality: 'image', sidecar: sc.nodes[0]!.socketPath, ranks: [1] });
 *   const producer = await sc.client(0);
 *   await sendEmbeddings(producer, id, emb, [[1]]);
 *   const res = await geri.post('/image/generate', { embedding_data_id: id, height: 64, width: 64 });
 *   await geri.stop();
 */
import { randomBytes } from 'node:crypto';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { DEADLINE_HEADER } from '../../functions/sdk/dispatch.js';
import { waitUntil } from '../../lib/wait.js';
import type { SidecarClient } from '../../sidecar/client/client.js';
import { tensor } from '../../sidecar/tensor.js';
import { Prng } from '../../executors/models/onnx/prng.js';
import { modelsDir } from './models.js';
import { startServerProcess } from './server-process.js';
import { type SidecarCluster, startSidecars } from './sidecar.js';

export const IMAGE_GEN_ID = 'cornserve/tiny-image-gen';
export const AUDIO_GEN_ID = 'cornserve/tiny-audio-gen';
/** The input hidden size of both tiny generators. */
export const GEN_HIDDEN = 256;

export interface GeriOptions {
  modality: 'image' | 'audio';
  /** The sidecar node's unix socket (omit: a Geri without sidecar). */
  sidecar?: string;
  /** This Geri's sidecar ranks. @default [1] */
  ranks?: number[];
  maxBatchSize?: number;
  /** Deadline of requests without a header. */
  timeoutMs?: number;
  /** Use these arguments (e.g. a descriptor's launch args) instead of the model id / modality / batch size above. */
  args?: string[];
}

export interface Geri {
  readonly url: string;
  readonly pid: number;
  /** POST a JSON body; `deadlineMs` sets x-cornserve-deadline to now + deadlineMs. */
  post(path: string, body: unknown, o?: { deadlineMs?: number; signal?: AbortSignal }): Promise<Response>;
  info(): Promise<Record<string, unknown> & { served: Record<string, number>; inflight: number; receiving: number }>;
  metrics(): Promise<string>;
  /** SIGKILL (a crash) and wait. */
  kill(): Promise<void>;
  /** SIGTERM and wait; idempotent. */
  stop(): Promise<void>;
}

export async function startGeri(opts: GeriOptions): Promise<Geri> {
  const p = await startServerProcess({
    what: 'geri',
    entry: 'executors/geri/main.ts',
    args: [
      '--models-dir', await modelsDir(),
      ...(opts.args ?? ['--modality', opts.modality, '--model-id', opts.modality === 'image' ? IMAGE_GEN_ID : AUDIO_GEN_ID, '--max-batch-size', String(opts.maxBatchSize ?? 1)]),
      ...(opts.timeoutMs ? ['--timeout-ms', String(opts.timeoutMs)] : []),
    ],
    env: (port) => ({
      [EXECUTOR_ENV.executorId]: `geri-test-${port}`,
      [EXECUTOR_ENV.sidecar]: opts.sidecar ? `unix:${opts.sidecar}` : undefined,
      ...(opts.sidecar ? { [EXECUTOR_ENV.ranks]: (opts.ranks ?? [1]).join(',') } : {}),
    }),
  });
  const { url } = p;
  return {
    url,
    pid: p.child.pid!,
    post: (path, body, o = {}) => fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(o.deadlineMs !== undefined ? { [DEADLINE_HEADER]: String(Date.now() + o.deadlineMs) } : {}) },
      body: JSON.stringify(body),
      ...(o.signal ? { signal: o.signal } : {}),
    }),
    info: async () => (await (await fetch(`${url}/info`)).json()) as never,
    metrics: async () => (await fetch(`${url}/metrics`)).text(),
    kill: () => p.kill(),
    stop: p.stop,
  };
}

/** A fresh sidecar data id (lowercase hex, like a DataForward's). */
export const dataId = () => randomBytes(8).toString('hex');

/** Deterministic embeddings [rows, hidden] in about [-1, 1]. */
export function embeddings(rows: number, seed = 1, hidden = GEN_HIDDEN): { data: Float32Array; shape: [number, number] } {
  const rng = new Prng(seed);
  return { data: Float32Array.from({ length: rows * hidden }, () => rng.next() * 2 - 1), shape: [rows, hidden] };
}

/** Sends embeddings to `dst` in `chunks` row-chunks (as an encoder would), chunk k = rows [k·n/c, (k+1)·n/c). */
export async function sendEmbeddings(
  producer: SidecarClient, id: string, emb: { data: Float32Array; shape: [number, number] }, dst: number[][], chunks = 1,
): Promise<void> {
  const [rows, hidden] = emb.shape;
  for (let k = 0; k < chunks; k++) {
    const from = Math.floor((k * rows) / chunks);
    const to = Math.floor(((k + 1) * rows) / chunks);
    await producer.send(tensor('f32', [to - from, hidden], emb.data.slice(from * hidden, to * hidden)), id, dst, { chunk: k, numChunks: chunks });
  }
}

/** A sidecar node serving ranks 0 (a producer client, standing for an encoder) and 1 (a Geri). */
export interface GeriNode {
  readonly sc: SidecarCluster;
  readonly geri: Geri;
  readonly producer: SidecarClient;
  /** Where the producer sends: Geri's rank group. */
  readonly toGeri: number[][];
  /** Resolves once the sidecar holds no chunk and no byte (fails after 15 s naming what it waited for). */
  memoryFreed(): Promise<void>;
  stop(): Promise<void>;
}

export async function startGeriNode(o: Omit<GeriOptions, 'sidecar' | 'ranks'>): Promise<GeriNode> {
  const sc = await startSidecars({ nodes: [[0, 1]] });
  try {
    const [geri, producer] = await Promise.all([startGeri({ ...o, sidecar: sc.nodes[0]!.socketPath, ranks: [1] }), sc.client(0)]);
    return {
      sc, geri, producer, toGeri: [[1]],
      memoryFreed: () => waitUntil('sidecar memory back to zero', async () => {
        const h = await sc.nodes[0]!.health();
        return h.bytesInUse === 0 && h.chunks === 0;
      }, { timeoutMs: 15_000 }).then(() => undefined),
      stop: async () => {
        await geri.stop();
        await sc.stop();
      },
    };
  } catch (e) {
    await sc.stop();
    throw e;
  }
}
