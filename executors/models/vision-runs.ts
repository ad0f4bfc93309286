/**
 * How a batch of vision items (patches layout) becomes encoder runs, shared by the single-process encoder
 * (run.ts runVision) and Eric's tensor-parallel workers (eric/worker/tp-vision.ts): each temporal group of each
 * item is one attention segment; consecutive segments are packed into runs of at most max_patches_per_run
 * patches (block-diagonal attention via segment_ids), so a batch of N items gives exactly the N single-item
 * results. The caller says how one run is encoded; this module packs, feeds and splits the rows per item.
 */
import type ort from 'onnxruntime-node';
import { modelErrors } from './errors.js';
import type { VisionInput } from './preprocess/image.js';
import { type Embeddings, f32, i64 } from './tensors.js';

/** One attention segment: temporal group `t` of item `item`, `n` patches. */
export interface VisionSegment { item: number; t: number; n: number }

/** Groups consecutive segments into runs of at most `maxRun` patches (a segment larger than that runs alone). */
export function packVisionRuns(items: readonly VisionInput[], maxRun: number): VisionSegment[][] {
  const runs: VisionSegment[][] = [];
  let cur: VisionSegment[] = [];
  let total = 0;
  items.forEach((it, item) => {
    if (it.patchDim !== items[0]!.patchDim) throw modelErrors.invalid('items in one batch must have the same patch size');
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

/** The encoder inputs of one run: patches [total, patchDim], position_ids [total, 2], segment_ids [total]. */
export function visionRunFeeds(items: readonly VisionInput[], segs: readonly VisionSegment[]): Record<string, ort.Tensor> {
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

/** Encoder feeds for one item run alone (all its temporal groups as separate attention segments). */
export function visionFeeds(item: VisionInput): Record<string, ort.Tensor> {
  return visionRunFeeds([item], packVisionRuns([item], Infinity)[0]!);
}

/**
 * Packs `items`, encodes each run with `encodeRun` (its feeds → [tokens, hidden] after the 2×2 merge, or
 * undefined on a rank that produces no output), and returns one Embeddings per item, or undefined when no run
 * produced output.
 */
export async function encodeVisionRuns(
  items: readonly VisionInput[],
  opts: { maxPatchesPerRun: number; mergeSize: number },
  encodeRun: (feeds: Record<string, ort.Tensor>) => Promise<Embeddings | undefined>,
): Promise<Embeddings[] | undefined> {
  const perItem: Float32Array[][] = items.map(() => []);
  let hidden: number | undefined;
  for (const segs of packVisionRuns(items, opts.maxPatchesPerRun)) {
    const emb = await encodeRun(visionRunFeeds(items, segs));
    if (!emb) continue;
    const h = emb.shape[1];
    hidden = h;
    let row = 0;
    for (const s of segs) {
      const rows = s.n / opts.mergeSize ** 2;
      perItem[s.item]!.push(emb.data.subarray(row * h, (row + rows) * h));
      row += rows;
    }
  }
  if (hidden === undefined) return undefined;
  const h = hidden;
  return perItem.map((parts) => {
    const data = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
    let o = 0;
    for (const p of parts) { data.set(p, o); o += p.length; }
    return { data, shape: [data.length / h, h] };
  });
}
