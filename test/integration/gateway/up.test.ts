import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../../lib/net.js';
import { waitUntil } from '../../../lib/wait.js';
import { repoRoot } from '../../helpers/repo.js';

let child: ChildProcess | undefined;
test.after.always(() => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
});

test('`cornserve up --apps functions/apps` prints how to call each app, serves it, and stops every process on SIGTERM', async (t) => {
  // `up` registers every app in functions/apps in order, and echo comes after any-to-any and arena, which start model
  // executors: on a loaded machine that takes minutes. Bounds about "eventually", not speed (ava's idle timeout follows t.timeout).
  t.timeout(300_000);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, CORNSERVE_LOG_LEVEL: 'warn' };
  delete env.CORNSERVE_ADMIN_TOKEN;
  child = spawn(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', 'up', '--port', String(port), '--devices', '2', '--apps', 'functions/apps'], { cwd: repoRoot, env });
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
  // The whole echo block (its last line): stdout comes in pieces, and the first line of the block may arrive alone.
  await waitUntil('up printed the echo usage', () => /cornserve invoke echo '\{"text":"hello","chunks":1\}'/.test(stdout), { timeoutMs: 240_000 }).catch((e: Error) => {
    throw new Error(`${e.message}\nstdout: ${stdout}\nstderr: ${stderr.slice(-3000)}`);
  });

  t.regex(stdout, /export CORNSERVE_ADMIN_TOKEN=\S{20,}/, 'a generated token is printed');
  t.regex(stdout, new RegExp(`curl -s -X POST http://127\\.0\\.0\\.1:${port}/app/invoke/echo .*'\\{"request_data":\\{"text":"hello"\\}\\}'`));
  t.regex(stdout, /cornserve invoke echo '\{"text":"hello","chunks":1\}'/);

  const base = `http://127.0.0.1:${port}`;
  const res = await fetch(`${base}/app/invoke/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"request_data":{"text":"up"}}' });
  t.deepEqual(await res.json(), { echo: 'up' });
  const tasks = (await (await fetch(`${base}/tasks/list`)).json()) as Array<{ executors: Array<{ url: string }> }>;
  const executorUrl = tasks[0]!.executors[0]!.url;

  child.kill('SIGTERM');
  t.is(await exited, 0, stderr.slice(-3000));
  await t.throwsAsync(fetch(`${executorUrl}/health`), undefined, 'the executor is gone');
  await t.throwsAsync(fetch(`${base}/health`), undefined, 'the gateway is gone');
});
