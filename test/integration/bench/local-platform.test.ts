/**
 * `cornserve bench` (the commander command itself) against a real local platform: an echo app whose executor
 * takes 200 ms per request. Serial, so the latencies of one run are not the load of another.
 */
import test from 'ava';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { benchCommand } from '../../../control/cli/bench.js';
import { freePort } from '../../../lib/net.js';
import { sleep, waitUntil } from '../../../lib/wait.js';
import { echoAppSource, startPlatform, type TestPlatform } from '../../helpers/platform.js';
import { repoRoot } from '../../helpers/repo.js';

const SERVICE_MS = 200;
let p: TestPlatform;
let dir: string;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cornserve-bench-'));
  p = await startPlatform({ devices: 2 });
  await p.register(echoAppSource('slow', SERVICE_MS));
  await writeFile(join(dir, 'good.jsonl'), '{"text":"hello"}\n');
  await writeFile(join(dir, 'half-bad.jsonl'), '{"text":"hello"}\n{"no_text":1}\n');
});
test.after.always(async () => {
  await p?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Runs `cornserve bench ARGS` against `gateway`; returns what it printed. */
async function bench(args: string[], gateway = p.gatewayUrl): Promise<{ out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  await benchCommand({ out: (l) => out.push(l), err: (l) => err.push(l) }, () => gateway).exitOverride().parseAsync(args, { from: 'user' });
  return { out, err };
}

const results = (resultDir: string) => JSON.parse(readFileSync(join(resultDir, 'results.json'), 'utf8')) as Record<string, any>;

test.serial('measured E2EL through the platform is the echo service time plus overhead', async (t) => {
  const resultDir = join(dir, 'e2el');
  const { out } = await bench(['--api', 'invoke', '--app', 'slow', '--dataset', join(dir, 'good.jsonl'), '--request-rate', '5', '--num-requests', '8', '--seed', '1', '--result-dir', resultDir, '--no-plots']);
  const r = results(resultDir);
  t.is(r.completed, 8);
  t.is(r.failed, 0);
  for (const req of r.requests) {
    t.true(req.e2elMs >= SERVICE_MS, `E2EL ${req.e2elMs} ms ≥ the service time`);
    t.true(req.e2elMs < SERVICE_MS + 20_000, `E2EL ${req.e2elMs} ms within a generous overhead bound`);
  }
  for (const key of ['completed', 'request_throughput', 'output_throughput', 'mean_ttft_ms', 'median_ttft_ms', 'p99_ttft_ms', 'mean_e2el_ms', 'p99_e2el_ms', 'p99_itl_ms', 'mean_tpot_ms']) t.true(key in r, key);
  t.true(r.mean_e2el_ms >= SERVICE_MS);
  t.true(out.join('\n').includes('Serving Benchmark Result'));
  t.true(existsSync(join(resultDir, 'summary.md')));
});

test.serial('failed requests are counted by their error code, never dropped', async (t) => {
  const resultDir = join(dir, 'failures');
  const { out } = await bench(['--api', 'invoke', '--app', 'slow', '--dataset', join(dir, 'half-bad.jsonl'), '--request-rate', 'inf', '--num-requests', '6', '--result-dir', resultDir, '--no-plots']);
  const r = results(resultDir);
  t.is(r.requests.length, 6);
  t.is(r.completed, 3);
  t.is(r.failed, 3);
  const codes = Object.entries(r.errors_by_code as Record<string, number>);
  t.is(codes.length, 1);
  t.is(codes[0]![1], 3);
  t.true(r.requests.filter((q: any) => !q.ok).every((q: any) => q.status === 422), 'the gateway rejects the bad request_data with 422');
  t.true(out.join('\n').includes(`Failed requests:`) && out.join('\n').includes(`${codes[0]![0]}: 3`));
});

test.serial('Ctrl-C stops sending, waits for the requests in flight and writes the partial results', async (t) => {
  const resultDir = join(dir, 'interrupted');
  // The real CLI in its own process, interrupted the way a terminal does it.
  const child = spawn(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', '--gateway', p.gatewayUrl, 'bench', '--api', 'invoke', '--app', 'slow',
    '--dataset', join(dir, 'good.jsonl'), '--request-rate', '10', '--num-requests', '10000', '--result-dir', resultDir, '--no-plots'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => child.kill('SIGKILL'));
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await waitUntil('the run started sending', () => /bench: invoke → slow/.test(err), { timeoutMs: 60_000 });
  await sleep(2000);
  child.kill('SIGINT');
  t.is(await exited, 0);
  const r = results(resultDir);
  t.true(r.interrupted);
  t.true(r.requests.length > 0 && r.requests.length < 10000);
  t.is(r.completed + r.failed, r.requests.length);
  t.is(r.failed, 0, 'the requests in flight finished within the drain bound');
  t.regex(err, /stopping: no new requests/);
  t.regex(out, /Interrupted: +yes \(partial results\)/);
});

test.serial('an unknown app is an error before any request is sent', async (t) => {
  const resultDir = join(dir, 'unknown');
  await t.throwsAsync(bench(['--api', 'invoke', '--app', 'nope', '--num-requests', '5', '--result-dir', resultDir]), { message: /unknown app 'nope' \(registered apps: slow\)/ });
  await t.throwsAsync(bench(['--api', 'chat', '--model', 'nope', '--num-requests', '5', '--result-dir', resultDir]), { message: /unknown model 'nope'/ });
  t.false(existsSync(resultDir));
});

test.serial('an unreachable gateway is an error before any request is sent', async (t) => {
  await t.throwsAsync(bench(['--api', 'invoke', '--app', 'slow', '--num-requests', '5'], `http://127.0.0.1:${await freePort()}`), { message: /cannot reach the gateway/ });
});

test.serial('malformed --mix, --slo and dataset lines are errors naming the option', async (t) => {
  await t.throwsAsync(bench(['--api', 'chat', '--model', 'slow', '--mix', 'text:1,smell:1']), { message: /--mix: unknown kind 'smell'/ });
  await t.throwsAsync(bench(['--api', 'chat', '--model', 'slow', '--slo', 'ttft=100']), { message: /--slo: unknown key 'ttft'/ });
  await writeFile(join(dir, 'broken.jsonl'), '{"text":"a"}\nnot json\n');
  await t.throwsAsync(bench(['--api', 'invoke', '--app', 'slow', '--dataset', join(dir, 'broken.jsonl')]), { message: /--dataset line 2: not valid JSON/ });
});
