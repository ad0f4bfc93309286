import test from 'ava';
import type { VisionInput } from '../../../../executors/models/preprocess/image.js';
import { encodeVisionRuns, packVisionRuns, visionRunFeeds } from '../../../../executors/models/vision-runs.js';

/** A synthetic item: patch p of group t holds the value `base + t * 100 + p` in every column. */
function item(t: number, h: number, w: number, base: number, patchDim = 3): VisionInput {
  const n = t * h * w;
  const patches = new Float32Array(n * patchDim);
  for (let i = 0; i < n; i++) patches.fill(base + Math.floor(i / (h * w)) * 100 + (i % (h * w)), i * patchDim, (i + 1) * patchDim);
  return { patches, positionIds: new BigInt64Array(n * 2), grid: { t, h, w }, patchDim, tokens: n / 4 };
}

test('segments are packed into runs of at most max patches, and a larger segment runs alone', (t) => {
  const runs = packVisionRuns([item(1, 2, 2, 0), item(2, 2, 2, 1000), item(1, 4, 4, 2000)], 8);
  t.deepEqual(runs, [
    [{ item: 0, t: 0, n: 4 }, { item: 1, t: 0, n: 4 }],
    [{ item: 1, t: 1, n: 4 }],
    [{ item: 2, t: 0, n: 16 }],
  ]);
});

test('items of different patch sizes cannot share a batch', (t) => {
  t.throws(() => packVisionRuns([item(1, 2, 2, 0, 3), item(1, 2, 2, 0, 6)], Infinity), { message: /same patch size/ });
});

test("a run's feeds hold each segment's patches in order, with one segment id per segment", (t) => {
  const items = [item(1, 2, 2, 0), item(2, 2, 2, 1000)];
  const feeds = visionRunFeeds(items, packVisionRuns(items, Infinity)[0]!);
  t.deepEqual(feeds.patches!.dims, [12, 3]);
  t.deepEqual([...(feeds.segment_ids!.data as BigInt64Array)].map(Number), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]);
  const firstColumn = [...(feeds.patches!.data as Float32Array)].filter((_, i) => i % 3 === 0);
  t.deepEqual(firstColumn, [0, 1, 2, 3, 1000, 1001, 1002, 1003, 1100, 1101, 1102, 1103]);
});

test("each item gets back the rows of its own segments, across runs", async (t) => {
  const items = [item(1, 2, 2, 0), item(2, 2, 2, 1000)];
  // The "encoder" merges 2x2 patches into one row holding the first patch's value: one row per segment here.
  const out = await encodeVisionRuns(items, { maxPatchesPerRun: 4, mergeSize: 2 }, async (feeds) => {
    const p = feeds.patches!.data as Float32Array;
    const rows = p.length / 3 / 4;
    const data = new Float32Array(rows);
    for (let r = 0; r < rows; r++) data[r] = p[r * 4 * 3]!;
    return { data, shape: [rows, 1] };
  });
  t.deepEqual(out!.map((e) => [...e.data]), [[0], [1000, 1100]]);
  t.deepEqual(out!.map((e) => e.shape), [[1, 1], [2, 1]]);
});

test('no run producing output (a tensor-parallel rank other than 0) gives undefined', async (t) => {
  t.is(await encodeVisionRuns([item(1, 2, 2, 0)], { maxPatchesPerRun: Infinity, mergeSize: 2 }, async () => undefined), undefined);
});
