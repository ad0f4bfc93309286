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
import { resultDirOf, runBench, startRunPlatform } from './platform.js';
import { soakTable } from './soak-table.js';

const minutes = Number(process.env.SOAK_MINUTES ?? 10);
const rate = Number(process.env.SOAK_RATE ?? 2);
if (!(minutes >= 1) || !(rate > 0)) throw new Error('SOAK_MINUTES must be at least 1 and SOAK_RATE above 0');

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
