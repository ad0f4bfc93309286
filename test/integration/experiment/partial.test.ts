/**
 * An experiment keeps every scenario that finished: results.json is rewritten after each one, marked partial until
 * the last, so Ctrl-C in the middle leaves the finished scenarios on disk and exits 130.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitUntil } from '../../../lib/wait.js';
import { repoRoot } from '../../helpers/repo.js';

let dir: string;
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cornserve-experiment-partial-'));
});
test.after.always(() => rm(dir, { recursive: true, force: true }));

test('Ctrl-C between scenarios keeps the finished ones in results.json, marked partial, and exits 130', async (t) => {
  t.timeout(10 * 60_000);
  const file = join(dir, 'results.json');
  const child = spawn(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', 'experiment', 'reference', '--quick', '--result-dir', dir], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => child.kill('SIGKILL'));
  await waitUntil('the first workload was written', () => existsSync(file), { timeoutMs: 8 * 60_000 });
  child.kill('SIGINT');
  t.is(await exited, 130);
  const r = JSON.parse(readFileSync(file, 'utf8')) as { partial: boolean; workloads: unknown[] };
  t.true(r.partial);
  t.true(r.workloads.length >= 1);
  t.regex(stderr, /results\.json holds the \d+ finished scenario\(s\) of \d+, marked "partial": true/);
});
