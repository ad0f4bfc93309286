/**
 * Ctrl-C on `cornserve up` (a real child process, signalled the way a terminal does: SIGINT to its whole process
 * group) while streams are in flight: they run to their end within the drain grace, new requests get 503
 * SHUTTING_DOWN meanwhile, and `up` exits 0.
 */
import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../../lib/net.js';
import { waitUntil } from '../../../lib/wait.js';
import { ndjsonLines, slowStreamAppSource, TEST_ADMIN_TOKEN } from '../../helpers/platform.js';
import { repoRoot } from '../../helpers/repo.js';

let child: ChildProcess | undefined;
const appsDir = mkdtempSync(join(tmpdir(), 'cs-up-shutdown-apps-'));
test.after.always(() => {
  if (child?.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
  rmSync(appsDir, { recursive: true, force: true });
});

test('Ctrl-C on `up` lets in-flight streams finish, answers new requests 503 SHUTTING_DOWN, and exits 0', async (t) => {
  t.timeout(300_000);
  const CHUNKS = 10;
  writeFileSync(join(appsDir, 'slowpoke.ts'), slowStreamAppSource('slowpoke', 300));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // Its own process group, like a shell job: SIGINT to the group is what a terminal's Ctrl-C sends.
  child = spawn(
    process.execPath,
    ['--import', 'tsx', 'control/cli/main.ts', 'up', '--port', String(port), '--devices', '1', '--apps', appsDir, '--drain-timeout', '120000'],
    { cwd: repoRoot, env: { ...process.env, CORNSERVE_LOG_LEVEL: 'warn', CORNSERVE_ADMIN_TOKEN: TEST_ADMIN_TOKEN }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
  const invoke = (data: unknown) => fetch(`${base}/app/invoke/slowpoke`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ request_data: data }) });
  await waitUntil('up registered slowpoke', async () => {
    try {
      return Object.values((await (await fetch(`${base}/app/list`)).json()) as Record<string, string>).includes('ready');
    } catch {
      return false;
    }
  }, { timeoutMs: 240_000, intervalMs: 250 }).catch((e: Error) => {
    throw new Error(`${e.message}\n${output.slice(-3000)}`);
  });

  const streams = await Promise.all(Array.from({ length: 3 }, (_, i) => invoke({ text: `s${i}`, chunks: CHUNKS })));
  for (const s of streams) t.is(s.status, 200);
  const bodies = streams.map((s) => ndjsonLines(s));

  process.kill(-child.pid!, 'SIGINT');
  const refusal = await waitUntil('a new request is refused', async () => {
    const res = await invoke({ text: 'late', chunks: 1 });
    return res.status === 503 ? ((await res.json()) as { error: { code: string; message: string } }) : (await res.body?.cancel(), false);
  }, { timeoutMs: 60_000 }).catch((e: Error) => {
    throw new Error(`${e.message}\n${output.slice(-5000)}`);
  });
  t.is(refusal.error.code, 'SHUTTING_DOWN');
  t.regex(refusal.error.message, /shutting down/);

  for (const [i, body] of bodies.entries())
    t.deepEqual(await body, Array.from({ length: CHUNKS }, (_, index) => ({ echo: `s${i}`, index })), `stream ${i} ran to its end`);
  t.is(await exited, 0, output.slice(-3000));
});
