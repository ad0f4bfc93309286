/**
 * `make soak`: `make run`'s platform under a mixed chat load (text, image and audio requests to the mllm app) for
 * SOAK_MINUTES (default 10), through `cornserve bench --soak`, which samples the resident memory of every platform
 * process and the p99 latency per minute. Prints, as Markdown for docs/reliability.md, the per-minute table and the
 * verdict: "flat", or each process that grows with its slope in MiB per minute.
 *
 *   make soak                     # SOAK_MINUTES=3 SOAK_RATE=1 make soak for a shorter, lighter one
 */
import { loadavg } from 'node:os';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SoakResults } from '../../bench/report/results.js';
import { resultDirOf, runBench, startRunPlatform } from './platform.js';

const minutes = Number(process.env.SOAK_MINUTES ?? 10);
const rate = Number(process.env.SOAK_RATE ?? 2);
if (!(minutes >= 1) || !(rate > 0)) throw new Error('SOAK_MINUTES must be at least 1 and SOAK_RATE above 0');

const mib = (b: number | undefined) => (b === undefined ? '–' : (b / 1024 / 1024).toFixed(0));
/** A process label without its pid: a restarted process keeps its row. */
const role = (label: string) => label.replace(/ \[\d+\]$/, '');

/** The Markdown the docs carry: p99 and every process's RSS per minute, then the verdict with slopes. */
export function soakTable(soak: SoakResults): string {
  const ms = soak.minutes;
  const head = `| | ${ms.map((m) => `min ${m.minute}`).join(' | ')} |\n|---|${ms.map(() => '---:').join('|')}|`;
  const p99 = `| p99 E2EL (ms) | ${ms.map((m) => (m.p99E2elMs === null ? '–' : m.p99E2elMs.toFixed(0))).join(' | ')} |`;
  const done = `| completed / failed | ${ms.map((m) => `${m.completed} / ${m.failed}`).join(' | ')} |`;
  const labels = [...new Set(ms.flatMap((m) => Object.keys(m.rssBytes)))].sort((a, b) => role(a).localeCompare(role(b)));
  const rows = labels.map((l) => `| ${role(l)} (MiB) | ${ms.map((m) => mib(m.rssBytes[l])).join(' | ')} |`);
  const total = `| all processes (MiB) | ${ms.map((m) => mib(Object.values(m.rssBytes).reduce((a, b) => a + b, 0))).join(' | ')} |`;
  const counted = ms.length >= 3 ? ms.length - 2 : Math.max(1, ms.length - 1); // minutes between the verdict's first and last
  const growth = soak.verdict.growing.map((g) => `${role(g.process)} grows ${mib(g.fromBytes)} → ${mib(g.toBytes)} MiB, ${((g.toBytes - g.fromBytes) / 1024 / 1024 / counted).toFixed(1)} MiB/min`);
  const verdict = soak.verdict.memoryFlat && soak.verdict.p99Flat ? 'flat' : [...growth, ...(soak.verdict.p99Flat ? [] : ['p99 grows'])].join('; ');
  return [head, p99, done, total, ...rows, '', `Verdict: **${verdict}** (${soak.verdict.message})`].join('\n');
}

const up = await startRunPlatform();
try {
  const dir = resultDirOf('soak');
  const load = loadavg()[0]!.toFixed(1);
  const results = await runBench(up.url, dir, ['--api', 'chat', '--model', 'mllm', '--request-rate', String(rate), '--soak', String(minutes)]);
  if (!results.soak) throw new Error('the bench run has no soak section');
  const md = `Soak: ${minutes} min of chat to mllm at ${rate} req/s (text 0.5, image 0.3, audio 0.2); load average ${load} at the start, ${loadavg()[0]!.toFixed(1)} at the end.\n\n${soakTable(results.soak)}\n`;
  await writeFile(join(dir, 'soak.md'), md);
  process.stdout.write(`\n${md}\nresults: ${dir}\n`);
} finally {
  await up.stop();
}
