/** In-flight requests over time, exactly, from the records (a step at every send and every completion). Pure. */
import type { RequestRecord } from './record.js';

export function inFlightSteps(records: readonly RequestRecord[]): Array<{ tS: number; inFlight: number }> {
  const events: Array<[number, number]> = [];
  for (const r of records) {
    events.push([r.sentMs, 1]);
    events.push([r.sentMs + (r.e2elMs ?? 0), -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const out: Array<{ tS: number; inFlight: number }> = [{ tS: 0, inFlight: 0 }];
  let n = 0;
  for (const [t, d] of events) {
    n += d;
    const tS = t / 1000;
    if (out.at(-1)!.tS === tS) out.at(-1)!.inFlight = n;
    else out.push({ tS, inFlight: n });
  }
  return out;
}

/** Points the timeline plot draws at most: a 700k-request run would otherwise draw 1.4 M steps (a 100 MB SVG). */
export const TIMELINE_POINTS = 1000;

/**
 * The peak in-flight count per time bucket, fed level changes in time order, in bounded memory: when the run
 * outgrows `maxBuckets` buckets, neighbouring buckets merge (their peak is the larger) and the width doubles.
 * Peaks, not means, so a burst stays visible however long the run. Used by the simulator while it runs (the
 * run need not keep its records) and to thin a recorded timeline before it is plotted.
 */
export class InFlightPeaks {
  private widthMs: number;
  private readonly peaks: number[] = [];
  private level = 0;

  constructor(private readonly maxBuckets = TIMELINE_POINTS, firstWidthMs = 1) {
    if (!Number.isInteger(maxBuckets) || maxBuckets < 2) throw new RangeError(`maxBuckets must be an integer ≥ 2, got ${maxBuckets}`);
    this.widthMs = firstWidthMs;
  }

  /** The in-flight count becomes `level` at `tMs` (non-decreasing times). */
  set(tMs: number, level: number): void {
    let b = Math.floor(tMs / this.widthMs);
    while (b >= this.maxBuckets) {
      this.merge();
      b = Math.floor(tMs / this.widthMs);
    }
    // Buckets passed without a change held the old level throughout; the bucket of the change held both.
    while (this.peaks.length <= b) this.peaks.push(this.level);
    this.peaks[b] = Math.max(this.peaks[b]!, level);
    this.level = level;
  }

  points(): Array<{ tS: number; inFlight: number }> {
    return this.peaks.map((p, i) => ({ tS: (i * this.widthMs) / 1000, inFlight: p }));
  }

  private merge(): void {
    const half = Math.ceil(this.peaks.length / 2);
    for (let i = 0; i < half; i++) this.peaks[i] = Math.max(this.peaks[2 * i]!, this.peaks[2 * i + 1] ?? 0);
    this.peaks.length = half;
    this.widthMs *= 2;
  }
}

/** A timeline thinned to at most `maxPoints` points (peak per bucket); a short one is returned as it is. */
export function thinTimeline(steps: ReadonlyArray<{ tS: number; inFlight: number }>, maxPoints = TIMELINE_POINTS): Array<{ tS: number; inFlight: number }> {
  if (steps.length <= maxPoints) return [...steps];
  const peaks = new InFlightPeaks(maxPoints);
  for (const s of steps) peaks.set(s.tS * 1000, s.inFlight);
  return peaks.points();
}
