/**
 * `make bench`: runs every benchmark module in test/bench (each exports run(): BenchResult[]), prints one
 * table and writes .bench/results.json. `--only a,b` runs a subset.
 */
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { formatTable, type BenchModule, type BenchResult } from './types.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const SKIP = new Set(['main.ts', 'types.ts']);

const opts = new Command('bench')
  .description('Runs the benchmarks; each figure is printed next to its baseline measured in the same run')
  .option('--only <names>', 'comma-separated benchmark file names (without .ts)')
  .parse()
  .opts<{ only?: string }>();

const only = opts.only?.split(',').map((s) => s.trim());
const files = (await readdir(HERE)).filter((f) => f.endsWith('.ts') && !SKIP.has(f) && (!only || only.includes(f.replace(/\.ts$/, '')))).sort();
const all: BenchResult[] = [];
let failed = 0;
for (const f of files) {
  process.stderr.write(`running ${f} ...\n`);
  try {
    const mod = (await import(pathToFileURL(join(HERE, f)).href)) as BenchModule;
    const results = await mod.run();
    all.push(...results);
    console.log(`\n${f}\n${formatTable(results)}`);
    for (const r of results) if (r.notes) console.log(`- ${r.name}: ${r.notes}`);
  } catch (e) {
    failed++;
    console.error(`benchmark ${f} failed: ${(e as Error).stack ?? e}`);
  }
}
await mkdir(join(HERE, '../../.bench'), { recursive: true });
await writeFile(join(HERE, '../../.bench/results.json'), JSON.stringify({ at: new Date().toISOString(), results: all }, null, 2));
console.log(`\nall benchmarks\n${formatTable(all)}\n\nwritten to .bench/results.json`);
process.exit(failed ? 1 : 0);
