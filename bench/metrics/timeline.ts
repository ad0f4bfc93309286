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
