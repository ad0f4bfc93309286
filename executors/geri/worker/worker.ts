/**
 * Geri's device worker (a worker thread of the engine; see executors/common/worker-runtime.ts). Loads the
 * generator model once, then runs batches: images (one PNG per item) or audio (PCM16 chunks streamed to the
 * engine as they are made). Geri runs on one device: no tensor parallelism, no sidecar in the worker (the
 * router receives the embeddings and frees their shared memory before a request is enqueued).
 */
import type { Item } from '../../../lib/executor-protocol.js';
import { type Job, serveWorker } from '../../common/worker-runtime.js';
import { loadModel } from '../../models/loader.js';
import { CancelFlags } from '../cancel-flags.js';
import { GERI_SESSION_OPTIONS, runAudioItems, runImageItems } from './jobs.js';

export interface GeriWorkerData {
  modelDir: string;
  /** The engine's cancel flags (see cancel-flags.ts); absent = items always run to the end. */
  cancelFlags?: SharedArrayBuffer;
}

await serveWorker<GeriWorkerData>(async (ctx) => {
  const model = await loadModel(ctx.data.modelDir, { sessionOptions: GERI_SESSION_OPTIONS });
  const flags = ctx.data.cancelFlags ? CancelFlags.attach(ctx.data.cancelFlags) : undefined;
  const cancelled = (it: Item) => flags?.cancelled(it.meta.cancelSlot as number | undefined) ?? false;
  return {
    async run(job: Job) {
      if (job.meta.kind === 'image') return runImageItems(model, job.items, cancelled);
      return runAudioItems(model, job.items, (itemId, seq, tensors) => ctx.stream(job, itemId, seq, undefined, tensors), cancelled);
    },
    close: () => model.close(),
  };
});
