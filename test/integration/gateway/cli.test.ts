import test from 'ava';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../helpers/repo.js';
import { ECHO_APP, TEST_ADMIN_TOKEN, startPlatform, type TestPlatform } from '../../helpers/platform.js';

const run = promisify(execFile);

let p: TestPlatform;
let dir: string;
test.before(async () => {
  p = await startPlatform({ devices: 2 });
  dir = await mkdtemp(join(tmpdir(), 'cornserve-cli-'));
});
test.after.always(async () => {
  await p?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(args: string[], opts: { token?: string | null; stdin?: string } = {}): Promise<CliResult> {
  const env = { ...process.env, CORNSERVE_GATEWAY_URL: p.gatewayUrl, CORNSERVE_ADMIN_TOKEN: opts.token === null ? '' : (opts.token ?? TEST_ADMIN_TOKEN) };
  if (opts.stdin !== undefined) {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', ...args], { cwd: repoRoot, env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
      child.stdin.end(opts.stdin);
    });
  }
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', ...args], { cwd: repoRoot, env });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

test.serial('register shows progress and prints the app id', async (t) => {
  const r = await cli(['register', ECHO_APP, '--alias', 'parrot']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stderr, /deploying echo-0ms/);
  t.regex(r.stderr, /✓ echo-0ms (ready|shared)/);
  t.regex(r.stdout, /^app-[0-9a-f]{32} registered: Successfully deployed 1 unit task/);
});

test.serial('list shows the app with its alias and state', async (t) => {
  const r = await cli(['list']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /APP ID\s+NAME\s+ALIASES\s+STATE/);
  t.regex(r.stdout, /app-[0-9a-f]{32}\s+echo\s+parrot\s+ready/);
});

test.serial('invoke with a JSON literal prints the JSON response', async (t) => {
  const r = await cli(['invoke', 'parrot', '{"text":"hi"}']);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(JSON.parse(r.stdout), { echo: 'hi' });
});

test.serial('invoke of a streaming request prints one line per chunk', async (t) => {
  const r = await cli(['invoke', 'echo', '{"text":"s","chunks":3}']);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.stdout.trim().split('\n').map((l) => JSON.parse(l) as unknown), [0, 1, 2].map((index) => ({ echo: 's', index })));
});

test.serial('invoke reads a YAML file', async (t) => {
  const file = join(dir, 'req.yaml');
  await writeFile(file, 'text: from yaml\n');
  const r = await cli(['invoke', 'echo', file]);
  t.deepEqual(JSON.parse(r.stdout), { echo: 'from yaml' });
});

test.serial('invoke reads stdin with -', async (t) => {
  const r = await cli(['invoke', 'echo', '-'], { stdin: '{"text":"from stdin"}' });
  t.is(r.code, 0, r.stderr);
  t.deepEqual(JSON.parse(r.stdout), { echo: 'from stdin' });
});

test.serial('an invalid request prints the field and exits 1', async (t) => {
  const r = await cli(['invoke', 'echo', '{"text":1}']);
  t.is(r.code, 1);
  t.regex(r.stderr, /INVALID_INPUT: .*text/);
});

test.serial('tasks lists the unit task and its executor', async (t) => {
  const r = await cli(['tasks']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /echobasetask-[0-9a-f]+\s+echo-0ms\s+ready\s+1\s+\S+\s+1 ready \/ 1/);
});

test.serial('scale adds and removes devices', async (t) => {
  const [task] = await p.store.listTasks();
  const upR = await cli(['scale', task!.taskId, '1']);
  t.is(upR.code, 0, upR.stderr);
  t.regex(upR.stdout, /now has 2 device\(s\)/);
  const downR = await cli(['scale', task!.taskId, '-1']);
  t.is(downR.code, 0, downR.stderr);
  t.regex(downR.stdout, /now has 1 device\(s\)/);
});

test.serial('without the admin token, register is refused with a clear message', async (t) => {
  const r = await cli(['register', ECHO_APP], { token: null });
  t.is(r.code, 1);
  t.regex(r.stderr, /UNAUTHORIZED: missing admin token/);
});

test.serial('unregister by alias removes the app', async (t) => {
  const r = await cli(['unregister', 'parrot']);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stdout, /unregistered echo \(app-/);
  t.deepEqual(await p.store.listApps(), []);
});

test('a gateway that is not running is reported as such', async (t) => {
  const r = (await run(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', '--gateway', 'http://127.0.0.1:1', 'list'], { cwd: repoRoot }).catch((e: CliResult) => e)) as CliResult;
  t.is(r.code, 1);
  t.regex(r.stderr, /cannot reach the gateway at http:\/\/127\.0\.0\.1:1/);
});
