/**
 * The vision encoder run tensor-parallel by one rank of Eric's worker group: the same packing as run.ts's
 * runVision (each temporal group of each item is one attention segment; segments are packed into runs of at
 * most max_patches_per_run patches), then the manifest's TP stages, with `partial-sum` stages all-reduced
 * through shared memory (ShmAllReduce) instead of in-process. Rank 0 applies the model id's projector
 * (unsharded) and splits the rows per item; other ranks return undefined.
 */
import type { ShmAllReduce } from '../../common/all-reduce.js';
import { modelErrors } from '../../models/errors.js';
import type { LoadedModel } from '../../models/loader.js';
import type { VisionInput } from '../../models/preprocess/image.js';
import { type Embeddings, asMatrix, f32, i64, project } from '../../models/run.js';
import { type Env, reducePartials, runStage } from '../../models/tensor-parallel.js';

interface Segment { item: number; t: number; n: number }

/** Groups consecutive segments into runs of at most `maxRun` patches (a segment larger than that runs alone). */
function packRuns(items: readonly VisionInput[], maxRun: number): Segment[][] {
  const runs: Segment[][] = [];
  let cur: Segment[] = [];
  let total = 0;
  items.forEach((it, item) => {
    for (let t = 0; t < it.grid.t; t++) {
      const n = it.grid.h * it.grid.w;
      if (cur.length && total + n > maxRun) { runs.push(cur); cur = []; total = 0; }
      cur.push({ item, t, n });
      total += n;
    }
  });
  if (cur.length) runs.push(cur);
  return runs;
}

function runFeeds(items: readonly VisionInput[], segs: readonly Segment[]): Env {
  const patchDim = items[0]!.patchDim;
  const total = segs.reduce((a, s) => a + s.n, 0);
  const patches = new Float32Array(total * patchDim);
  const pos = new BigInt64Array(total * 2);
  const segIds = new BigInt64Array(total);
  let o = 0;
  segs.forEach(({ item, t, n }, k) => {
    const src = items[item]!;
    patches.set(src.patches.subarray(t * n * patchDim, (t + 1) * n * patchDim), o * patchDim);
    pos.set(src.positionIds.subarray(t * n * 2, (t + 1) * n * 2), o * 2);
    segIds.fill(BigInt(k), o, o + n);
    o += n;
  });
  return { patches: f32(patches, [total, patchDim]), position_ids: i64(pos, [total, 2]), segment_ids: i64(segIds, [total]) };
}

export async function runVisionTp(
  body: LoadedModel, adapters: LoadedModel | undefined, items: readonly VisionInput[], modelId: string, rank: number, reduce: ShmAllReduce,
): Promise<Embeddings[] | undefined> {
  const tp = body.manifest.tensor_parallel;
  const pre = body.manifest.preprocessing.image;
  if (!tp || !pre) throw modelErrors.unsupported(`model '${body.manifest.name}' has no tensor-parallel vision encoder`);
  if (items.some((it) => it.patchDim !== items[0]!.patchDim)) throw modelErrors.invalid('items in one batch must have the same patch size');
  const perItem: Float32Array[][] = items.map(() => []);
  let hidden = 0;
  for (const segs of packRuns(items, pre.max_patches_per_run ?? Infinity)) {
    const env = runFeeds(items, segs);
    for (const stage of tp.stages) {
      const r = await runStage(body, stage, rank, env);
      if (stage.kind === 'replicated') { env[r.name] = r.value; continue; }
      if (!env.hidden) throw modelErrors.invalid(`stage '${stage.name}' reduces into 'hidden', which is not in the environment`);
      env.hidden = reducePartials(env.hidden, [f32(reduce.sum(r.value.data as Float32Array), r.value.dims)]);
    }
    if (!adapters) continue;
    const emb = await project(adapters, modelId, asMatrix(env.features, 'tp vision encoder'));
    hidden = emb.shape[1];
    let row = 0;
    for (const s of segs) {
      const rows = s.n / pre.merge_size ** 2;
      perItem[s.item]!.push(emb.data.subarray(row * hidden, (row + rows) * hidden));
      row += rows;
    }
  }
  if (!adapters) return undefined;
  return perItem.map((parts) => {
    const data = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
    let o = 0;
    for (const p of parts) { data.set(p, o); o += p.length; }
    return { data, shape: [data.length / hidden, hidden] };
  });
}
