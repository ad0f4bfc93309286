import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { waitUntil } from '../../../lib/wait.js';

const CHILD = fileURLToPath(new URL('./fixtures/shutdown-child.ts', import.meta.url));

/** Starts the fixture in `mode`; resolves once it is ready. */
async function start(mode: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, mode], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await waitUntil('the child ready', () => out.includes('ready\n') || child.exitCode !== null, { timeoutMs: 20_000 });
  return { child, exited, lines: () => out.trim().split('\n').slice(1) };
}

test('a close function runs once with the signal, then the process exits 0', async (t) => {
  const c = await start('close');
  t.teardown(() => c.child.kill('SIGKILL'));
  c.child.kill('SIGTERM');
  await waitUntil('the close begun', () => c.lines().length > 0, { timeoutMs: 10_000 });
  c.child.kill('SIGTERM'); // a second SIGTERM does nothing more
  t.is(await c.exited, 0);
  t.deepEqual(c.lines(), ['closing SIGTERM', 'closed']);
});

test('a second SIGINT during a close exits at once with 130', async (t) => {
  const c = await start('hang-long');
  t.teardown(() => c.child.kill('SIGKILL'));
  c.child.kill('SIGINT');
  await waitUntil('the close begun', () => c.lines().length > 0, { timeoutMs: 10_000 });
  c.child.kill('SIGINT');
  t.is(await c.exited, 130);
  t.deepEqual(c.lines(), ['closing']);
});

test('stop(reason) begins the same shutdown without a signal', async (t) => {
  const c = await start('close');
  t.teardown(() => c.child.kill('SIGKILL'));
  c.child.stdin!.write('stop\n');
  t.is(await c.exited, 0);
  t.deepEqual(c.lines(), ['closing stdin', 'closed']);
});

test('a close that never finishes is cut off at timeoutMs with exit 0', async (t) => {
  const c = await start('hang');
  t.teardown(() => c.child.kill('SIGKILL'));
  c.child.kill('SIGINT');
  t.is(await c.exited, 0);
  t.deepEqual(c.lines(), ['closing']);
});

test('the server form stops listening before its cleanup runs, then exits 0', async (t) => {
  const c = await start('server');
  t.teardown(() => c.child.kill('SIGKILL'));
  c.child.kill('SIGTERM');
  t.is(await c.exited, 0);
  t.deepEqual(c.lines(), ['cleanup listening=false']);
});
