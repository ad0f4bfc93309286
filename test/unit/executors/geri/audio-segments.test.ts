import test from 'ava';
import { AudioSegmenter } from '../../../../executors/geri/router/audio-segments.js';

const H = 2;
/** Rows [from, to) whose values are their global row index. */
const rows = (from: number, to: number) => Float32Array.from({ length: (to - from) * H }, (_, i) => from + Math.floor(i / H));

/** The [from, to) windows (global rows) generateAudio vocodes over `frames` rows. */
function directWindows(frames: number, chunk: number, ctx: number): Array<[number, number, number]> {
  const out: Array<[number, number, number]> = [];
  for (let start = 0; start < frames; start += chunk) out.push([Math.max(0, start - ctx), start, Math.min(frames, start + chunk)]);
  return out;
}

/** The windows generateAudio with startFrame vocodes over one segment, in global rows (read from the values). */
function segmentWindows(data: Float32Array, n: number, startFrame: number, chunk: number, ctx: number): Array<[number, number, number]> {
  const g = (r: number) => data[r * H]!;
  const out: Array<[number, number, number]> = [];
  for (let start = startFrame; start < n; start += chunk) out.push([g(Math.max(0, start - ctx)), g(start), g(Math.min(n, start + chunk) - 1) + 1]);
  return out;
}

for (const [chunk, ctx, cuts] of [[4, 2, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]], [7, 3, [20, 20]], [5, 0, [3, 9, 1, 4]], [50, 4, [11]]] as const) {
  test(`segments of a stream cut as ${cuts.join('+')} rows (chunk ${chunk}, context ${ctx}) vocode the windows of one run over all rows`, (t) => {
    const seg = new AudioSegmenter(H, chunk, ctx);
    const got: Array<[number, number, number]> = [];
    let at = 0;
    for (const n of cuts) {
      seg.push(rows(at, at + n));
      at += n;
      for (let s = seg.take(false); s; s = seg.take(false)) {
        t.is(s.rows - s.startFrame >= chunk, true, 'before the end, a segment holds whole windows only');
        got.push(...segmentWindows(s.data, s.rows, s.startFrame, chunk, ctx));
      }
    }
    for (let s = seg.take(true); s; s = seg.take(true)) got.push(...segmentWindows(s.data, s.rows, s.startFrame, chunk, ctx));
    t.deepEqual(got, directWindows(at, chunk, ctx));
  });
}
