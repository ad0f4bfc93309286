import test from 'ava';
import { soakMinutes, soakVerdict, type SoakMinute } from '../../../../bench/metrics/soak.js';
import { continueSweep, highestPassingRate, parseRates } from '../../../../bench/metrics/sweep.js';
import type { RequestRecord } from '../../../../bench/metrics/record.js';

test('a sweep continues while attainment stays at or above 90% and reports the last passing rate', (t) => {
  const points = [{ rate: 1, attainment: 1 }, { rate: 2, attainment: 0.95 }, { rate: 4, attainment: 0.9 }, { rate: 8, attainment: 0.4 }];
  t.true(continueSweep(points.slice(0, 3)));
  t.false(continueSweep(points));
  t.is(highestPassingRate(points), 4);
  t.is(highestPassingRate([{ rate: 1, attainment: 0.5 }]), null);
  t.true(continueSweep([{ rate: 1, attainment: null }]), 'without SLOs every rate runs');
});

test('the highest passing rate ignores a pass after the first failure', (t) => {
  t.is(highestPassingRate([{ rate: 8, attainment: 0.95 }, { rate: 2, attainment: 1 }, { rate: 4, attainment: 0.5 }]), 2);
});

test('sweep rates parse ascending and distinct; bad lists name --sweep-rates', (t) => {
  t.deepEqual(parseRates('4,1,2,2'), [1, 2, 4]);
  t.throws(() => parseRates('1,x'), { message: /--sweep-rates/ });
  t.throws(() => parseRates('0,1'), { message: /--sweep-rates/ });
});

const MiB = 1024 * 1024;
const minute = (m: number, p99: number, rss: Record<string, number>): SoakMinute => ({ minute: m, p99E2elMs: p99, completed: 10, failed: 0, rssBytes: rss });

test('a soak with steady memory and p99 is flat', (t) => {
  const v = soakVerdict([0, 1, 2, 3, 4].map((m) => minute(m, 100 + (m % 2) * 10, { up: 200 * MiB + (m % 2) * 8 * MiB, llm: 300 * MiB })));
  t.true(v.memoryFlat && v.p99Flat, v.message);
  t.deepEqual(v.growing, []);
});

test('a soak names the process whose memory climbs every minute', (t) => {
  const v = soakVerdict([0, 1, 2, 3, 4].map((m) => minute(m, 100, { 'cornserve up [1]': 200 * MiB, 'executors/eric/main.ts [2]': (150 + 40 * m) * MiB })));
  t.false(v.memoryFlat);
  t.deepEqual(v.growing.map((g) => g.process), ['executors/eric/main.ts [2]']);
  t.regex(v.message, /memory grows: executors\/eric\/main\.ts \[2\] 190 MiB → 310 MiB/);
});

test('a soak whose p99 keeps rising says so', (t) => {
  const v = soakVerdict([0, 1, 2, 3].map((m) => minute(m, 100 * 2 ** m, { up: 100 * MiB })));
  t.false(v.p99Flat);
  t.true(v.memoryFlat);
});

test('soak minutes group requests by the minute they finished and take the last memory sample of each minute', (t) => {
  const rec = (sentMs: number, e2elMs: number, ok = true): RequestRecord => ({ index: 0, kind: 'text', scheduledMs: sentMs, sentMs, ok, status: ok ? 200 : 502, e2elMs, itlMs: [], inputTokens: 1, outputTokens: 1 });
  const minutes = soakMinutes([rec(1000, 100), rec(59_950, 100), rec(61_000, 300), rec(62_000, 50, false)], [{ tS: 10, rssBytes: { a: 1 } }, { tS: 50, rssBytes: { a: 2 } }, { tS: 100, rssBytes: { a: 3 } }], 120);
  t.is(minutes.length, 2);
  t.deepEqual(minutes.map((m) => [m.completed, m.failed]), [[1, 0], [2, 1]]);
  t.deepEqual(minutes.map((m) => m.rssBytes), [{ a: 2 }, { a: 3 }]);
  t.true(Math.abs(minutes[1]!.p99E2elMs! - 300) < 1);
});
