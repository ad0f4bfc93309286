/**
 * A simulation's results survive their size and its interruption: results.json is written as a stream (never one
 * string), every request goes to requests.jsonl as it ends, and Ctrl-C leaves partial files marked as such.
 *
 * The size run is cluster-64x8 with 16× longer outputs for 32 simulated seconds (test/fixtures/scenarios): the
 * same kept records and inter-token lists that put the hour's results.json past V8's largest string (~2^29
 * characters), in ~6,400 requests instead of 718,000.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { closeSync, createReadStream, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { simulateCommand } from '../../../sim/command.js';
import { waitUntil } from '../../../lib/wait.js';
import { repoRoot } from '../../helpers/repo.js';

/** V8's largest string on 64-bit (2^29 − 24 characters): JSON.stringify of a longer results.json throws. */
const V8_MAX_STRING = 2 ** 29 - 24;

let dir: string;
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cornserve-sim-size-'));
});
test.after.always(() => rm(dir, { recursive: true, force: true }));

async function jsonlLines(file: string): Promise<{ count: number; last: string }> {
  let count = 0;
  let last = '';
  for await (const line of createInterface({ input: createReadStream(file) })) {
    count++;
    last = line;
  }
  return { count, last };
}

/** `length` bytes of `file` from `start` (the whole file is too long for one string). */
function bytesAt(file: string, start: number, length: number): string {
  const buf = Buffer.alloc(length);
  const fd = openSync(file, 'r');
  const n = readSync(fd, buf, 0, length, start);
  closeSync(fd);
  return buf.subarray(0, n).toString('utf8');
}

/** The top-level scalar fields of a results.json: its head, up to the first per-request list. */
const headFields = (file: string) => JSON.parse(`${bytesAt(file, 0, 1 << 16).split(/,?\n "input_lens"/)[0]!}}`) as Record<string, unknown>;

test.serial('a simulated run whose results pass V8\'s largest string writes results.json and requests.jsonl', async (t) => {
  t.timeout(30 * 60_000); // ~100 s of CPU and ~900 MB of files: minutes on a shared machine
  const out = join(dir, 'size');
  const err: string[] = [];
  await simulateCommand({ out: () => undefined, err: (l) => err.push(l) }).exitOverride()
    .parseAsync([join(repoRoot, 'test/fixtures/scenarios/cluster-64x8-long-outputs.yaml'), '--duration', '40', '--no-plots', '--result-dir', out], { from: 'user' });
  const file = join(out, 'results.json');
  t.true(statSync(file).size > V8_MAX_STRING, 'the file is longer than any string this process can hold');
  const r = headFields(file);
  t.false(r.partial);
  t.true((r.completed as number) > 6000);
  const tail = bytesAt(file, statSync(file).size - 300, 300);
  t.regex(tail, /"requests_jsonl": \{[^}]*"dropped": 0\s*\}\s*\}\s*$/, 'the file ends where the object does');
  const lines = await jsonlLines(join(out, 'requests.jsonl'));
  t.is(lines.count, r.completed as number, 'one line per request');
  t.true((JSON.parse(lines.last) as { itlMs: number[] }).itlMs.length > 100, 'with its inter-token gaps');
  t.false(existsSync(`${file}.writing`));
});

test.serial('Ctrl-C during a simulation writes partial results, marked as partial, and exits 130', async (t) => {
  const out = join(dir, 'interrupted');
  const child = spawn(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', 'simulate', '--scenario', 'cluster-64x8', '--duration', '3600', '--no-plots', '--result-dir', out], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => child.kill('SIGKILL'));
  await waitUntil('the simulation reported its first simulated minute', () => /simulate: \d+ simulated s, \d+ requests/.test(stderr), { timeoutMs: 170_000 });
  child.kill('SIGINT');
  t.is(await exited, 130);
  const r = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as Record<string, unknown>;
  t.true(r.partial);
  t.true(r.interrupted);
  t.regex(r.partial_reason as string, /^stopped at [\d.]+ simulated s \(Ctrl-C\)$/);
  t.true((r.completed as number) > 0);
  const lines = await jsonlLines(join(out, 'requests.jsonl'));
  t.is(lines.count, (r.completed as number) + (r.failed as number), 'every request that ended is in requests.jsonl');
  t.regex(stderr, /the results are partial/);
});
