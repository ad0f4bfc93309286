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
 * the id is failed on the sidecar so its consumers stop waiting. Degree 1: a forwarded item's projector writes
 * its embeddings straight into sidecar shared memory (in-place.ts), and the send moves them with no copy.
 */
import { withTraceparent } from '../../../lib/telemetry.js';
import { SidecarClient } from '../../../sidecar/client/client.js';
import { type Tensor, tensor as sidecarTensor } from '../../../sidecar/tensor.js';
import { toWire } from '../../../lib/executor-errors.js';
import { type Item, type ItemResult, tensor } from '../../../lib/executor-protocol.js';
import { type Job, serveWorker } from '../../common/worker-runtime.js';
import { encoderManifest } from '../../models/hf-encoder.js';
import { type LoadedModel, loadModel } from '../../models/loader.js';
import type { ImagePreprocessing, Manifest } from '../../models/manifest.js';
import { type VisionInput, patchify, smartResize } from '../../models/preprocess/image.js';
import { type Embeddings, type OutputPlacement, runAudio, runVision, runVisionNchw } from '../../models/run.js';
import { loadRank } from '../../models/tensor-parallel.js';
import { type ForwardedBytes, InPlaceOutputs, sentSince } from './in-place.js';
import { runVisionTp } from './tp-vision.js';

export interface EricWorkerData {
  modelDir: string;
  modality: 'image' | 'video' | 'audio';
  /** Every served model id (the base id and the adapters). */
  modelIds: string[];
  /** The executor's sidecar ranks, ascending; worker r is ranks[r]. */
  ranks: number[];
  sidecarSocket?: string;
}

/** What a forwarded item's result meta carries besides its shape: the bytes its send added, by path (metrics). */
export interface ForwardedMeta { forwarded?: ForwardedBytes }

/** What the router puts in each item's meta (with the preprocessing thread's layout and frameIndex). */
export interface ItemMeta {
  modality: 'image' | 'video' | 'audio';
  modelId: string;
  /** Destination groups of sidecar ranks, or null: no forwarding. */
  receivers: number[][] | null;
  /** Epoch ms (the request's deadline). */
  deadline: number;
  /** Return the embedding to the router (tensor `embedding`) besides any forwarding. */
  returnEmbedding?: boolean;
  /** The request's W3C traceparent: the sidecar send joins its trace. */
  traceparent?: string;
  layout?: 'patches' | 'nchw';
  /** For `frames`: which decoded frame fills each temporal position. */
  frameIndex?: number[];
}

const SESSION = { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' as const };

/** Decoded RGB frames (u8 [n, H, W, 3]) → the encoder's patches, exactly as preprocessImage / preprocessVideo make them. */
function visionInput(it: Item, pre: ImagePreprocessing): VisionInput {
  const { shape, data } = it.tensors.frames!;
  const [, height, width] = shape as [number, number, number, number];
  const bytes = height * width * 3;
  const frames = (it.meta as unknown as ItemMeta).frameIndex!.map((k) => ({ data: (data as Uint8Array).subarray(k * bytes, (k + 1) * bytes), width, height }));
  return patchify(frames, pre);
}

/** A job of one tiny synthetic item (zeros) for the model's input layout. */
function warmUpJob(manifest: Manifest, modality: EricWorkerData['modality'], modelId: string): Job {
  const meta = { modality, modelId };
  const pre = manifest.preprocessing;
  let item: Item;
  if (modality === 'audio') {
    const nMels = pre.audio!.n_mels;
    // A fixed frame count (Whisper's [batch, n_mels, 3000]) is what the graph takes; else any length.
    const fixed = manifest.graphs.encoder!.inputs[0]!.shape.at(-1);
    const frames = typeof fixed === 'number' ? fixed : 100;
    item = { id: 'warm-up', meta: {}, tensors: { mel: tensor('float32', [nMels, frames], new Float32Array(nMels * frames)) } };
  } else if (pre.image!.layout === 'nchw') {
    const { height, width } = pre.image!.image_size!;
    item = { id: 'warm-up', meta: { layout: 'nchw' }, tensors: { pixel_values: tensor('float32', [1, 3, height, width], new Float32Array(3 * height * width)) } };
  } else {
    const img = pre.image!;
    const f = img.patch_size * img.merge_size;
    const { height, width } = smartResize(2 * f, 2 * f, { factor: f, minPixels: img.min_pixels!, maxPixels: img.max_pixels! });
    item = {
      id: 'warm-up', meta: { layout: 'patches', frameIndex: Array(img.temporal_patch_size).fill(0) },
      tensors: { frames: tensor('uint8', [1, height, width, 3], new Uint8Array(height * width * 3)) },
    };
  }
  return { jobId: 0, meta, items: [item] };
}

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
    const body = tp ? await loadRank(modelDir, ctx.rank, { sessionOptions: SESSION }) : await loadModel(modelDir, { modelIds, sessionOptions: SESSION, manifest: await encoderManifest(modelDir, modelIds) });
    opened.push(body);
    const adapters = !tp ? body : ctx.rank === 0 ? await loadModel(modelDir, { graphs: [], modelIds, sessionOptions: SESSION }) : undefined;
    if (adapters && adapters !== body) opened.push(adapters);
    if (ctx.rank === 0 && sidecarSocket) {
      const hidden = Math.max(...modelIds.map((id) => body.manifest.model_ids[id]!.hidden_size));
      sidecar = await SidecarClient.connect({ rank: ranks[0]!, group: ranks, socketPath: sidecarSocket, memoryHint: hidden * 4 });
    }
    const forwardedSince = sidecar && sentSince(sidecar);

    /** `places[i]`: where item i's projector output goes (undefined: onnxruntime allocates it). */
    const encode = async (job: Job, places: readonly (OutputPlacement | undefined)[] = []): Promise<Embeddings[] | undefined> => {
      const { modality, modelId } = job.meta as { modality: string; modelId: string };
      if (modality === 'audio') {
        const out: Embeddings[] = [];
        for (const [i, it] of job.items.entries()) out.push(await runAudio(body, { data: it.tensors.mel!.data as Float32Array, nMels: it.tensors.mel!.shape[0]!, frames: it.tensors.mel!.shape[1]! }, modelId, places[i]));
        return out;
      }
      if ((job.items[0]?.meta as unknown as ItemMeta | undefined)?.layout === 'nchw') {
        const out: Embeddings[] = [];
        for (const [i, it] of job.items.entries()) out.push(await runVisionNchw(body, it.tensors.pixel_values!.data as Float32Array, it.tensors.pixel_values!.shape, modelId, places[i]));
        return out;
      }
      const inputs = job.items.map((it) => visionInput(it, body.manifest.preprocessing.image!));
      return tp ? runVisionTp(body, adapters, inputs, modelId, ctx.rank, ctx.reduce) : runVision(body, inputs, modelId, places);
    };

    /** The result meta of a forwarded item, with what its send added to `sidecar.sent` (the router counts it). */
    const counted = (meta: Record<string, unknown>): Record<string, unknown> & ForwardedMeta => {
      const d = forwardedSince?.();
      return d && (d.inPlaceBytes || d.copiedBytes) ? { ...meta, forwarded: d } : meta;
    };

    /** Forwards one item's embeddings; `placed`: they were produced in that sidecar tensor (sent as is, no copy). */
    const forward = async (it: Item, emb: Embeddings, placed: Tensor | undefined): Promise<ItemResult> => {
      const m = it.meta as unknown as ItemMeta;
      const meta = { shape: emb.shape };
      // Built before the send: after it, placed memory is the sidecar's (a consumer may free it), so return a copy of it.
      const returned = m.returnEmbedding ? { tensors: { embedding: tensor('float32', emb.shape, placed ? emb.data.slice() : emb.data) } } : {};
      if (!m.receivers) return { id: it.id, ok: true, meta, ...returned };
      try {
        if (!sidecar) throw new Error('this Eric has no sidecar');
        const s = sidecar;
        await withTraceparent(m.traceparent, () => s.send(placed ?? sidecarTensor('f32', emb.shape, emb.data), it.id, m.receivers!, { chunk: 0, numChunks: 1, deadline: m.deadline }));
        return { id: it.id, ok: true, meta: counted(meta), ...returned };
      } catch (e) {
        if (placed) sidecar!.release(placed); // a send that failed before taking it leaves it reserved
        await sidecar?.fail(it.id, `embedding could not be forwarded: ${(e as Error).message}`, m.receivers).catch(() => undefined);
        return { id: it.id, ok: false, meta: counted(meta), error: toWire(e) };
      }
    };

    // One small run before `ready`, so the first request does not pay onnxruntime's first-run set-up.
    await encode(warmUpJob(body.manifest, ctx.data.modality, modelIds[0]!));

    return {
      async run(job) {
        // Degree 1 with a sidecar: forwarded items are produced in place (TP keeps its projector's own output).
        const outputs = sidecar && !tp ? new InPlaceOutputs(sidecar) : undefined;
        const places = job.items.map((it, i) => {
          const m = it.meta as unknown as ItemMeta;
          return outputs && m.receivers ? outputs.placement(i, m.deadline) : undefined;
        });
        const embs = await encode(job, places).catch((e: unknown) => { outputs?.releaseAll(); throw e; });
        if (!embs) return job.items.map((it) => ({ id: it.id, ok: true }));
        // The sends are I/O: the next job's forward pass starts while they complete.
        return { pending: Promise.all(job.items.map((it, i) => forward(it, embs[i]!, outputs?.take(i)))) };
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
});
