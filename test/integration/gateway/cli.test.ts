import test from 'ava';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
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

test.serial('register of a taken name exits 1 with the reason, before any deployment', async (t) => {
  const r = await cli(['register', ECHO_APP]);
  t.is(r.code, 1);
  t.regex(r.stderr, /REGISTRATION_FAILED: .*"echo" is already used/);
  t.notRegex(r.stderr, /deploying/);
});

test.serial('a registration that fails while deploying (an SSE error event) exits 1 with its message', async (t) => {
  // Two new tasks on a 2-device platform that already holds one: the deployment cannot get its devices.
  const file = join(dir, 'greedy.ts');
  await writeFile(file, `import { z } from 'zod';
import { defineApp } from 'cornserve/sdk';
import { EchoTask } from 'cornserve/tasks';
export default defineApp({
  name: 'greedy', tasks: { a: new EchoTask({ serviceTimeMs: 101 }), b: new EchoTask({ serviceTimeMs: 102 }) },
  request: z.object({}), response: z.object({}),
  async serve() { return {}; },
});`);
  const r = await cli(['register', file]);
  t.is(r.code, 1, r.stdout);
  t.regex(r.stderr, /deploying/); // the stream had started
  t.regex(r.stderr, /registration failed: .*rolled back/);
});

test.serial('register of a source with a syntax error names the user\'s file, line and column', async (t) => {
  const file = join(dir, 'syntax.ts');
  await writeFile(file, "import { defineApp } from 'cornserve/sdk';\n\nexport default defineApp({\n  name: 'syntax',\n  request: z.object({}),\n  async serve() { return {} }\n)\n");
  const r = await cli(['register', file]);
  t.is(r.code, 1);
  t.regex(r.stderr, /syntax error at syntax\.ts:7:1/);
});

test.serial('profile of an unknown task says so, without announcing a profile first', async (t) => {
  const r = await cli(['profile', 'nosuchtask']);
  t.is(r.code, 1);
  t.notRegex(r.stderr, /profiling/);
  t.regex(r.stderr, /no task nosuchtask is deployed/);
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

test.serial('invoke prints control characters and U+FFFD escaped, as JSON that parses to the same value', async (t) => {
  const text = 'a\u001b[31mb\u0000c\ufffdd\u009be';
  const r = await cli(['invoke', 'echo', JSON.stringify({ text })]);
  t.is(r.code, 0, r.stderr);
  t.false(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\ufffd]/.test(r.stdout), JSON.stringify(r.stdout));
  t.deepEqual(JSON.parse(r.stdout), { echo: text });
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
  t.regex(r.stdout, /echobasetask-[0-9a-f]+\s+echo-0ms\s+EchoBaseTask\s+serviceTimeMs=0\s+ready\s+1\s+\S+\s+1 ready \/ 1/);
});

test.serial('tasks into a pipe its reader has closed (| head) ends quietly', async (t) => {
  const env = { ...process.env, CORNSERVE_GATEWAY_URL: p.gatewayUrl };
  const child = spawn(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', 'tasks'], { cwd: repoRoot, env });
  child.stdout.destroy(); // the reader is gone before the first line is written
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  t.is(stderr, '');
  t.is(code, 0);
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

test.serial('scaling a used task to zero warns on stderr, and its invocations say how to bring an executor back', async (t) => {
  const [task] = await p.store.listTasks();
  const downR = await cli(['scale', task!.taskId, '-1']);
  t.is(downR.code, 0, downR.stderr);
  t.regex(downR.stdout, /now has 0 device\(s\) and 0 executor\(s\)/);
  t.regex(downR.stderr, new RegExp(`warning: .*no executor now.*cornserve scale ${task!.taskId} 1`));
  const r = await cli(['invoke', 'echo', '{"text":"x"}']);
  t.is(r.code, 1);
  t.regex(r.stderr, new RegExp(`NO_EXECUTOR: .*scaled to 0 .*cornserve scale ${task!.taskId} 1`));
  const upR = await cli(['scale', task!.taskId, '1']);
  t.is(upR.code, 0, upR.stderr);
  t.regex((await cli(['invoke', 'echo', '{"text":"back"}'])).stdout, /"echo": "back"/);
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

/** A real TCP server that accepts connections and never answers (or, with `headers`, sends them and then nothing). */
async function silentServer(t: import('ava').ExecutionContext, headers?: string): Promise<string> {
  const server: Server = createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => {
      if (headers) socket.write(headers);
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** The CLI against `gateway`, with a safety net (the test fails rather than hangs if the CLI does). */
async function cliAgainst(gateway: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const argv = ['--import', 'tsx', 'control/cli/main.ts', '--gateway', gateway, ...args];
  return (await run(process.execPath, argv, { cwd: repoRoot, timeout: 120_000, env: { ...process.env, CORNSERVE_ADMIN_TOKEN: TEST_ADMIN_TOKEN, ...env } })
    .then((r) => ({ code: 0, ...r }))
    .catch((e: CliResult) => e)) as CliResult;
}

test('list against a gateway that accepts and never answers gives up after the client timeout and exits 1', async (t) => {
  const url = await silentServer(t);
  const r = await cliAgainst(url, ['--client-timeout-ms', '1500', 'list']);
  t.is(r.code, 1);
  t.regex(r.stderr, /did not answer within 1500 ms/);
});

test('the client timeout is read from CORNSERVE_CLIENT_TIMEOUT_MS too (tasks)', async (t) => {
  const url = await silentServer(t);
  const r = await cliAgainst(url, ['tasks'], { CORNSERVE_CLIENT_TIMEOUT_MS: '1200' });
  t.is(r.code, 1);
  t.regex(r.stderr, /did not answer within 1200 ms/);
});

test('register against a stream that starts and then goes silent gives up after the client timeout and exits 1', async (t) => {
  const url = await silentServer(t, 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n');
  // Long enough for the headers to arrive on a loaded machine (the first fetch of a process loads undici).
  const r = await cliAgainst(url, ['--client-timeout-ms', '8000', 'register', ECHO_APP]);
  t.is(r.code, 1);
  t.regex(r.stderr, /stopped sending its reply: nothing came within 8000 ms/);
});

test('up on a port already in use says so and how to pick another, without a stack', async (t) => {
  const busy = createServer(() => {});
  await new Promise<void>((ok) => busy.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => busy.close(() => ok())));
  const port = (busy.address() as AddressInfo).port;
  const r = (await run(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', 'up', '--port', String(port), '--devices', '1'], { cwd: repoRoot, timeout: 120_000 })
    .then((x) => ({ code: 0, ...x }))
    .catch((e: CliResult) => e)) as CliResult;
  t.is(r.code, 1);
  t.regex(r.stderr, new RegExp(`127\\.0\\.0\\.1:${port} is already in use.*--port N \\(make run PORT=N\\)`));
  t.notRegex(r.stderr, /^\s+at /m);
});

test('npx cornserve --help works (the package bin)', async (t) => {
  const { stdout } = await run('npx', ['--no-install', 'cornserve', '--help'], { cwd: repoRoot, timeout: 120_000 });
  t.regex(stdout, /Usage: cornserve/);
  t.regex(stdout, /--client-timeout-ms/);
});

test('a gateway that is not running is reported as such', async (t) => {
  const r = (await run(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', '--gateway', 'http://127.0.0.1:1', 'list'], { cwd: repoRoot }).catch((e: CliResult) => e)) as CliResult;
  t.is(r.code, 1);
  t.regex(r.stderr, /cannot reach the gateway at http:\/\/127\.0\.0\.1:1/);
});
