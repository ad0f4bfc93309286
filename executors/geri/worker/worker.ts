/**
 * Geri's device worker (a worker thread of the engine; see executors/common/worker-runtime.ts). Loads the
 * generator model once, then runs batches: images (one PNG per item) or audio (PCM16 chunks streamed to the
 * engine as they are made). Geri runs on one device: no tensor parallelism, no sidecar in the worker (the
 * router receives the embeddings and frees their shared memory before a request is enqueued).
 */
import { type Job, serveWorker } from '../../common/worker-runtime.js';
import { loadModel } from '../../models/loader.js';
import { GERI_SESSION_OPTIONS, runAudioItems, runImageItems } from './jobs.js';

export interface GeriWorkerData {
  modelDir: string;
}

await serveWorker<GeriWorkerData>(async (ctx) => {
  const model = await loadModel(ctx.data.modelDir, { sessionOptions: GERI_SESSION_OPTIONS });
  return {
    async run(job: Job) {
      if (job.meta.kind === 'image') return runImageItems(model, job.items);
      return runAudioItems(model, job.items, (itemId, seq, tensors) => ctx.stream(job, itemId, seq, undefined, tensors));
    },
    close: () => model.close(),
  };
});
