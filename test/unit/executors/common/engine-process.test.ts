import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { EngineProcess } from '../../../../executors/common/engine-process.js';
import { tensor, type Item } from '../../../../lib/executor-protocol.js';
import { logger } from '../../../../lib/log.js';
import { waitUntil } from '../../../../lib/wait.js';
import { isAlive } from '../../../helpers/repo.js';

const ENTRY = fileURLToPath(new URL('./fixtures/echo-engine.ts', import.meta.url));
const log = logger('test');
const item = (id: string, meta: Record<string, unknown> = {}): Item => ({ id, meta, tensors: { x: tensor('float32', [2], Float32Array.from([1.5, -2])) } });
const soon = () => Date.now() + 30_000;

async function startEngine(t: import('ava').ExecutionContext) {
  const { engine, info } = await EngineProcess.start({ entry: ENTRY, log });
  t.teardown(() => engine.stop());
  return { engine, info };
}

test('enqueue resolves with the engine\'s per-item results, tensors included', async (t) => {
  const { engine, info } = await startEngine(t);
  t.is(info.pid, engine.pid);
  const r = await engine.client.enqueue([item('a'), item('b')], { deadline: soon() });
  t.true(r.ok);
  t.deepEqual(r.items.map((i) => i.id), ['a', 'b']);
  t.deepEqual([...(r.items[0]!.tensors!.y!.data as Float32Array)], [3, -4]);
});

test('concurrent requests each get their own answer', async (t) => {
  const { engine } = await startEngine(t);
  const rs = await Promise.all([30, 0, 10].map((d, i) => engine.client.enqueue([item(`r${i}`, { delayMs: d })], { deadline: soon() })));
  t.deepEqual(rs.map((r) => r.items[0]!.id), ['r0', 'r1', 'r2']);
});

test('an engine crash fails pending requests at once with EXECUTOR_ENGINE_DEAD and marks it not alive', async (t) => {
  const { engine } = await startEngine(t);
  const slow = engine.client.enqueue([item('slow', { delayMs: 20_000 })], { deadline: soon() });
  const crash = engine.client.enqueue([item('boom', { crash: true })], { deadline: soon() });
  for (const p of [slow, crash]) {
    const err = await t.throwsAsync(p);
    t.is((err as { code?: string }).code, 'EXECUTOR_ENGINE_DEAD');
  }
  t.false(engine.alive);
  const later = await t.throwsAsync(engine.client.enqueue([item('x')], { deadline: soon() }));
  t.is((later as { code?: string }).code, 'EXECUTOR_ENGINE_DEAD');
});

test('a request past its deadline fails with EXECUTOR_DEADLINE_EXCEEDED and the engine keeps serving', async (t) => {
  const { engine } = await startEngine(t);
  const err = await t.throwsAsync(engine.client.enqueue([item('late', { delayMs: 2_000 })], { deadline: Date.now() + 100 }));
  t.is((err as { code?: string }).code, 'EXECUTOR_DEADLINE_EXCEEDED');
  t.is(engine.client.inflight, 0);
  t.true((await engine.client.enqueue([item('next')], { deadline: soon() })).ok);
});

test('a request whose deadline is beyond setTimeout range (30 days) is not failed early', async (t) => {
  const { engine } = await startEngine(t);
  const r = await engine.client.enqueue([item('far', { delayMs: 100 })], { deadline: Date.now() + 30 * 24 * 3600_000 });
  t.true(r.ok);
});

test('an aborted signal fails the request with EXECUTOR_CANCELLED', async (t) => {
  const { engine } = await startEngine(t);
  const ac = new AbortController();
  const p = engine.client.enqueue([item('a', { delayMs: 2_000 })], { deadline: soon(), signal: ac.signal });
  ac.abort();
  t.is(((await t.throwsAsync(p)) as { code?: string }).code, 'EXECUTOR_CANCELLED');
});

test('an engine that exits before it is ready makes start fail and leaves nothing running', async (t) => {
  const entry = fileURLToPath(new URL('../../../helpers/fixtures/exit-at-once.ts', import.meta.url));
  const err = await t.throwsAsync(EngineProcess.start({ entry, log, readyTimeoutMs: 20_000 }));
  t.is((err as { code?: string }).code, 'EXECUTOR_ENGINE_DEAD');
});

test('the engine exits when its router process is killed', async (t) => {
  const router = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./fixtures/engine-router.ts', import.meta.url))], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => { router.kill('SIGKILL'); });
  let out = '';
  router.stdout.on('data', (d: Buffer) => { out += d.toString(); });
  // Two node + tsx processes start one after the other: on a loaded machine (--concurrency 8) that took over 30 s.
  t.timeout(180_000);
  const pid = await waitUntil('engine pid', () => /"enginePid":(\d+)/.exec(out)?.[1], { timeoutMs: 120_000 });
  t.true(isAlive(Number(pid)));
  router.kill('SIGKILL');
  await waitUntil('engine exit', () => !isAlive(Number(pid)), { timeoutMs: 30_000 });
  t.pass();
});

test('an engine whose router died while the engine was starting exits once it connects', async (t) => {
  // The router exits right after spawning; the engine connects only after that (it waits to be re-parented),
  // so the IPC 'disconnect' happened before anyone listened for it.
  const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./fixtures/short-lived-router.ts', import.meta.url))], { encoding: 'utf8', timeout: 120_000 });
  const { enginePid, ipcDir } = JSON.parse(r.stdout) as { enginePid: number; ipcDir: string };
  t.teardown(() => {
    if (isAlive(enginePid)) process.kill(enginePid, 'SIGKILL');
    rmSync(ipcDir, { recursive: true, force: true });
  });
  t.timeout(180_000);
  await waitUntil('the orphaned engine exits', () => !isAlive(enginePid), { timeoutMs: 120_000 });
  t.pass();
});

test('a stopped engine is found by its heartbeat: pending requests fail with EXECUTOR_ENGINE_HUNG and the engine is killed', async (t) => {
  const { engine } = await EngineProcess.start({ entry: ENTRY, log, heartbeat: { everyMs: 100, hungAfterMs: 1_000 } });
  t.teardown(() => engine.stop());
  const pid = engine.pid!;
  process.kill(pid, 'SIGSTOP'); // alive but not running: only the missing heartbeat answers tell
  const pending = engine.client.enqueue([item('frozen')], { deadline: Date.now() + 120_000 });
  const err = await t.throwsAsync(pending);
  t.is((err as { code?: string }).code, 'EXECUTOR_ENGINE_HUNG');
  t.false(engine.alive);
  t.is(engine.health.code, 'EXECUTOR_ENGINE_HUNG');
  t.regex(engine.health.message, /stopped answering its heartbeat/);
  await engine.exited;
  t.false(isAlive(pid));
});
