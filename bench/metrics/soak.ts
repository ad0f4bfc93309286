/**
 * Soak verdicts: given per-minute p99 latency and the resident memory of every platform process, say whether
 * memory and p99 stay flat or name what grows. The first minute is warm-up (JIT, caches, pools filling) and is
 * left out when there are at least three minutes. A process "grows" when its RSS rose by more than both
 * `minGrowthBytes` and `minGrowthRatio` from the first counted minute to the last and rose in most minutes
 * (a leak climbs steadily; a GC sawtooth does not). p99 "grows" when the last minute's p99 exceeds the first
 * counted minute's by more than both `p99Ratio` and `p99SlackMs`. Pure.
 */
import { distribution } from './aggregate.js';
import type { RequestRecord } from './record.js';

export interface SoakMinute {
  minute: number;
  /** p99 E2EL of the requests that completed in this minute (null if none). */
  p99E2elMs: number | null;
  completed: number;
  failed: number;
  /** RSS bytes per process label at the end of the minute. */
  rssBytes: Record<string, number>;
}

export interface SoakVerdict {
  memoryFlat: boolean;
  p99Flat: boolean;
  growing: Array<{ process: string; fromBytes: number; toBytes: number }>;
  p99: { fromMs: number | null; toMs: number | null };
  /** One sentence for the summary. */
  message: string;
}

export interface SoakThresholds {
  minGrowthBytes: number;
  minGrowthRatio: number;
  p99Ratio: number;
  p99SlackMs: number;
}

export const SOAK_THRESHOLDS: SoakThresholds = { minGrowthBytes: 32 * 1024 * 1024, minGrowthRatio: 0.2, p99Ratio: 1.5, p99SlackMs: 50 };

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MiB`;

export function soakVerdict(minutes: readonly SoakMinute[], t: SoakThresholds = SOAK_THRESHOLDS): SoakVerdict {
  const counted = minutes.length >= 3 ? minutes.slice(1) : [...minutes];
  const first = counted[0];
  const last = counted.at(-1);
  const growing: SoakVerdict['growing'] = [];
  if (first && last && counted.length >= 2) {
    for (const [proc, to] of Object.entries(last.rssBytes)) {
      const from = first.rssBytes[proc];
      if (from === undefined) continue;
      const series = counted.map((m) => m.rssBytes[proc]).filter((v): v is number => v !== undefined);
      const rises = series.slice(1).filter((v, i) => v > series[i]!).length;
      const steady = rises >= Math.ceil((series.length - 1) / 2);
      if (to - from > t.minGrowthBytes && to - from > from * t.minGrowthRatio && steady) growing.push({ process: proc, fromBytes: from, toBytes: to });
    }
  }
  const p99From = first?.p99E2elMs ?? null;
  const p99To = last?.p99E2elMs ?? null;
  const p99Flat = p99From === null || p99To === null || !(p99To > p99From * t.p99Ratio && p99To - p99From > t.p99SlackMs);
  const memoryFlat = growing.length === 0;
  const parts = [
    memoryFlat ? 'memory flat' : `memory grows: ${growing.map((g) => `${g.process} ${mib(g.fromBytes)} → ${mib(g.toBytes)}`).join('; ')}`,
    p99Flat ? `p99 flat (${p99From?.toFixed(0) ?? '-'} → ${p99To?.toFixed(0) ?? '-'} ms)` : `p99 grows: ${p99From!.toFixed(0)} → ${p99To!.toFixed(0)} ms`,
  ];
  return { memoryFlat, p99Flat, growing, p99: { fromMs: p99From, toMs: p99To }, message: `${parts.join('; ')} over ${minutes.length} minute(s)` };
}

export interface RssSample {
  /** Seconds since the run's start. */
  tS: number;
  rssBytes: Record<string, number>;
}

/**
 * Records and memory samples → one SoakMinute per started minute: p99 E2EL of the requests that finished in
 * it (HDR percentile), counts, and the last memory sample taken in it.
 */
export function soakMinutes(records: readonly RequestRecord[], samples: readonly RssSample[], durationS: number): SoakMinute[] {
  const n = Math.max(1, Math.ceil(durationS / 60));
  return Array.from({ length: n }, (_, minute) => {
    const inMinute = records.filter((r) => Math.floor((r.sentMs + (r.e2elMs ?? 0)) / 60_000) === minute || (minute === n - 1 && (r.sentMs + (r.e2elMs ?? 0)) / 60_000 >= n));
    const ok = inMinute.filter((r) => r.ok && r.e2elMs !== undefined).map((r) => r.e2elMs!);
    const last = samples.filter((s) => Math.floor(s.tS / 60) === minute).at(-1) ?? (minute === n - 1 ? samples.at(-1) : undefined);
    return { minute, p99E2elMs: ok.length ? distribution(ok).p[99]! : null, completed: ok.length, failed: inMinute.length - ok.length, rssBytes: last?.rssBytes ?? {} };
  });
}
