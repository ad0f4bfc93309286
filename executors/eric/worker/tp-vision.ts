/**
 * The vision encoder run tensor-parallel by one rank of Eric's worker group: the same runs as run.ts's
 * runVision (models/vision-runs.ts), then the manifest's TP stages (models/tensor-parallel.ts), with
 * `partial-sum` stages all-reduced through shared memory (ShmAllReduce) instead of in-process. Rank 0 applies
 * the model id's projector (unsharded) and splits the rows per item; other ranks return undefined.
 */
import type { ShmAllReduce } from '../../common/all-reduce.js';
import { modelErrors } from '../../models/errors.js';
import type { LoadedModel } from '../../models/loader.js';
import type { VisionInput } from '../../models/preprocess/image.js';
import { type Embeddings, asMatrix, f32, project } from '../../models/run.js';
import { type Env, applyStage, runStage } from '../../models/tensor-parallel.js';
import { encodeVisionRuns } from '../../models/vision-runs.js';

export async function runVisionTp(
  body: LoadedModel, adapters: LoadedModel | undefined, items: readonly VisionInput[], modelId: string, rank: number, reduce: ShmAllReduce,
): Promise<Embeddings[] | undefined> {
  const tp = body.manifest.tensor_parallel;
  const pre = body.manifest.preprocessing.image;
  if (!tp || !pre) throw modelErrors.unsupported(`model '${body.manifest.name}' has no tensor-parallel vision encoder`);
  if (items.length === 0) return adapters ? [] : undefined;
  const runs = { maxPatchesPerRun: pre.max_patches_per_run ?? Infinity, mergeSize: pre.merge_size };
  return encodeVisionRuns(items, runs, async (feeds) => {
    const env: Env = { ...feeds };
    for (const stage of tp.stages) {
      const r = await runStage(body, stage, rank, env);
      // A partial sum is this rank's share: every rank sums all shares through shared memory before the residual add.
      applyStage(env, stage, [stage.kind === 'replicated' ? r : { name: r.name, value: f32(reduce.sum(r.value.data as Float32Array), r.value.dims) }]);
    }
    return adapters ? project(adapters, modelId, asMatrix(env.features, 'tp vision encoder')) : undefined;
  });
}
