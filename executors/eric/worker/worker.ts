/**
 * One of Eric's device workers (a worker thread of the engine; see executors/common/worker-runtime.ts).
 *
 * Degree 1: loads the whole encoder + every served model id's projector and runs run.ts's runVision /
 * runAudio (the direct runners), so served embeddings equal a direct run. Degree N: rank r loads only its
 * shard graphs (+ the projectors on rank 0) and runs the TP stages, all-reducing partial sums with the other
 * ranks through shared memory.
 *
 * Forwarding: the embeddings after the TP body are replicated on every rank, and the sidecar moves a TP
 * group's data once (from the leader, the lowest rank), so only rank 0 connects to the sidecar and sends:
 * `send(f32 [tokens, hidden], item id, receivers, chunk 0 of 1)`. A failed send fails that item only, and
 * the id is failed on the sidecar so its consumers stop waiting.
 */
import { SidecarClient } from '../../../sidecar/client/client.js';
import { tensor as sidecarTensor } from '../../../sidecar/tensor.js';
import { toWire } from '../../common/errors.js';
import type { Item, ItemResult } from '../../common/protocol.js';
import { type Job, serveWorker } from '../../common/worker-runtime.js';
import { type LoadedModel, loadModel } from '../../models/loader.js';
import type { VisionInput } from '../../models/preprocess/image.js';
import { type Embeddings, runAudio, runVision } from '../../models/run.js';
import { loadRank } from '../../models/tensor-parallel.js';
import { runVisionTp } from './tp-vision.js';

export interface EricWorkerData {
  modelDir: string;
  /** Every served model id (the base id and the adapters). */
  modelIds: string[];
  /** The executor's sidecar ranks, ascending; worker r is ranks[r]. */
  ranks: number[];
  sidecarSocket?: string;
}

/** What the router puts in each item's meta (besides the preprocessing's grid/tokens/patchDim). */
export interface ItemMeta {
  modality: 'image' | 'video' | 'audio';
  modelId: string;
  /** Destination groups of sidecar ranks, or null: no forwarding. */
  receivers: number[][] | null;
  /** Epoch ms (the request's deadline). */
  deadline: number;
  grid?: { t: number; h: number; w: number };
  tokens?: number;
  patchDim?: number;
}

const SESSION = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' as const };

const visionInput = (it: Item): VisionInput => {
  const m = it.meta as unknown as ItemMeta;
  return {
    patches: it.tensors.patches!.data as Float32Array,
    positionIds: it.tensors.position_ids!.data as BigInt64Array,
    grid: m.grid!, patchDim: m.patchDim!, tokens: m.tokens!,
  };
};

await serveWorker<EricWorkerData>(async (ctx) => {
  const { modelDir, modelIds, ranks, sidecarSocket } = ctx.data;
  const tp = ctx.size > 1;
  const opened: LoadedModel[] = [];
  let sidecar: SidecarClient | undefined;
  const close = async () => {
    sidecar?.close();
    await Promise.all(opened.map((m) => m.close()));
  };
  try {
    const body = tp ? await loadRank(modelDir, ctx.rank, { sessionOptions: SESSION }) : await loadModel(modelDir, { modelIds, sessionOptions: SESSION });
    opened.push(body);
    const adapters = !tp ? body : ctx.rank === 0 ? await loadModel(modelDir, { graphs: [], modelIds, sessionOptions: SESSION }) : undefined;
    if (adapters && adapters !== body) opened.push(adapters);
    if (ctx.rank === 0 && sidecarSocket) {
      const hidden = Math.max(...modelIds.map((id) => body.manifest.model_ids[id]!.hidden_size));
      sidecar = await SidecarClient.connect({ rank: ranks[0]!, group: ranks, socketPath: sidecarSocket, memoryHint: hidden * 4 });
    }

    const encode = async (job: Job): Promise<Embeddings[] | undefined> => {
      const { modality, modelId } = job.meta as { modality: string; modelId: string };
      if (modality === 'audio') {
        const out: Embeddings[] = [];
        for (const it of job.items) out.push(await runAudio(body, { data: it.tensors.mel!.data as Float32Array, nMels: it.tensors.mel!.shape[0]!, frames: it.tensors.mel!.shape[1]! }, modelId));
        return out;
      }
      const inputs = job.items.map(visionInput);
      return tp ? runVisionTp(body, adapters, inputs, modelId, ctx.rank, ctx.reduce) : runVision(body, inputs, modelId);
    };

    const forward = async (it: Item, emb: Embeddings): Promise<ItemResult> => {
      const m = it.meta as unknown as ItemMeta;
      const meta = { shape: emb.shape };
      if (!m.receivers) return { id: it.id, ok: true, meta };
      try {
        if (!sidecar) throw new Error('this Eric has no sidecar');
        await sidecar.send(sidecarTensor('f32', emb.shape, emb.data), it.id, m.receivers, { chunk: 0, numChunks: 1, deadline: m.deadline });
        return { id: it.id, ok: true, meta };
      } catch (e) {
        await sidecar?.fail(it.id, `embedding could not be forwarded: ${(e as Error).message}`, m.receivers).catch(() => undefined);
        return { id: it.id, ok: false, error: toWire(e) };
      }
    };

    return {
      async run(job) {
        const embs = await encode(job);
        if (!embs) return job.items.map((it) => ({ id: it.id, ok: true }));
        return Promise.all(job.items.map((it, i) => forward(it, embs[i]!)));
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
});
