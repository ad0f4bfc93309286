import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { LocalPlatform } from '../../../../control/platform/local.js';
import type { LaunchSpec } from '../../../../lib/descriptor.js';
import type { PlatformEvent } from '../../../../lib/platform.js';
import { waitUntil } from '../../../../lib/wait.js';
import { isAlive, repoRoot } from '../../../helpers/repo.js';

const ENV_SERVER = 'test/unit/control/platform/fixtures/env-server.ts';
const launch = (entry = ENV_SERVER, args: string[] = [], env?: Record<string, string>): LaunchSpec =>
  ({ kind: 'test', entry, image: 'none', args, devicesPerExecutor: 1, ...(env ? { env } : {}) });
const dev = (rank: number, node = 'local') => ({ node, globalRank: rank, localRank: rank });

function quietPlatform(lines: Array<[string, string]> = [], extra: Partial<ConstructorParameters<typeof LocalPlatform>[0]> = {}) {
  return new LocalPlatform({ repoRoot, devices: 2, logSink: (prefix, line) => void lines.push([prefix, line]), ...extra });
}

const healthy = (url: string) => waitUntil(`${url}/health`, () => fetch(`${url}/health`).then((r) => r.ok, () => false), { timeoutMs: 60_000 });
const envOf = async (url: string) => (await (await fetch(`${url}/env`)).json()) as { env: Record<string, string>; args: string[]; pid: number };
const nextEvent = (p: LocalPlatform, pred: (e: PlatformEvent) => boolean) =>
  new Promise<PlatformEvent>((resolve) => {
    const off = p.onEvent((e) => {
      if (pred(e)) {
        off();
        resolve(e);
      }
    });
  });

test('listNodes reports every configured node with its virtual devices', async (t) => {
  const p = new LocalPlatform({ repoRoot, devices: 3, nodes: ['a', 'b'] });
  t.deepEqual(await p.listNodes(), [{ node: 'a', devices: 3, deviceKind: 'cpu' }, { node: 'b', devices: 3, deviceKind: 'cpu' }]);
});

test('listNodes defaults to one node named local with 4 devices', async (t) => {
  t.deepEqual(await new LocalPlatform({ repoRoot }).listNodes(), [{ node: 'local', devices: 4, deviceKind: 'cpu' }]);
});

test('listNodes reports the device kind it was given (GPUs found by --devices auto)', async (t) => {
  t.deepEqual(await new LocalPlatform({ repoRoot, devices: 2, deviceKind: 'cuda' }).listNodes(), [{ node: 'local', devices: 2, deviceKind: 'cuda' }]);
});

test('an executor on GPUs receives the device kind and its node-local ranks as GPU ordinals', async (t) => {
  const p = quietPlatform([], { deviceKind: 'cuda', devices: 4 });
  t.teardown(() => p.shutdown());
  const inst = await p.startExecutor({
    executorId: 'ex-gpu', taskId: 'task-gpu', node: 'local',
    devices: [{ node: 'local', globalRank: 6, localRank: 2 }, { node: 'local', globalRank: 7, localRank: 3 }], launch: launch(),
  });
  await healthy(inst.url);
  const { env } = await envOf(inst.url);
  t.like(env, { CORNSERVE_DEVICE_KIND: 'cuda', CORNSERVE_DEVICE_ORDINALS: '2,3', CORNSERVE_SIDECAR_RANKS: '6,7' });
});

test('an executor receives its port, ranks, node, ids, sidecar and store URLs, and the launch args', async (t) => {
  const p = quietPlatform([], { storeUrl: 'redis://127.0.0.1:1', sidecarUrls: { local: 'http://127.0.0.1:2' } });
  t.teardown(() => p.shutdown());
  const inst = await p.startExecutor({
    executorId: 'ex-a', taskId: 'task-a', node: 'local', devices: [dev(0), dev(1)],
    launch: launch(ENV_SERVER, ['--flag', 'x'], { TEST_FROM_LAUNCH: 'l' }), env: { TEST_FROM_SPEC: 's' },
  });
  await healthy(inst.url);
  const { env, args } = await envOf(inst.url);
  t.is(inst.url, `http://127.0.0.1:${env.PORT}`);
  t.like(env, {
    CORNSERVE_EXECUTOR_ID: 'ex-a', CORNSERVE_TASK_ID: 'task-a', CORNSERVE_SIDECAR_RANKS: '0,1', CORNSERVE_NODE: 'local',
    CORNSERVE_SIDECAR_URL: 'http://127.0.0.1:2', CORNSERVE_STORE_URL: 'redis://127.0.0.1:1', TEST_FROM_LAUNCH: 'l', TEST_FROM_SPEC: 's',
    CORNSERVE_DEVICE_KIND: 'cpu', CORNSERVE_DEVICE_ORDINALS: '0,1',
  });
  t.deepEqual(args, ['--flag', 'x']);
});

test('executor output lines are re-logged with the executor id as prefix', async (t) => {
  const lines: Array<[string, string]> = [];
  const p = quietPlatform(lines);
  t.teardown(() => p.shutdown());
  const inst = await p.startExecutor({ executorId: 'ex-log', taskId: 't', node: 'local', devices: [dev(0)], launch: launch() });
  await healthy(inst.url);
  await waitUntil('the ready line', () => lines.find(([prefix, line]) => prefix === 'ex-log' && line.startsWith('env-server ready')));
  t.pass();
});

test('an executor that exits by itself is reported as unexpected, with its last output lines', async (t) => {
  const p = quietPlatform();
  t.teardown(() => p.shutdown());
  const exited = nextEvent(p, (e) => e.kind === 'executor-exited');
  await p.startExecutor({ executorId: 'ex-crash', taskId: 't', node: 'local', devices: [dev(0)], launch: launch('test/helpers/fixtures/exit-at-once.ts') });
  const e = await exited;
  t.like(e, { kind: 'executor-exited', executorId: 'ex-crash', taskId: 't', code: 3, expected: false });
  t.true(e.logTail?.some((l) => l.includes('exit-at-once fixture refuses to start')));
});

test('stopExecutor stops the process and reports the exit as expected', async (t) => {
  const p = quietPlatform();
  t.teardown(() => p.shutdown());
  const inst = await p.startExecutor({ executorId: 'ex-stop', taskId: 't', node: 'local', devices: [dev(0)], launch: launch() });
  await healthy(inst.url);
  const { pid } = await envOf(inst.url);
  const exited = nextEvent(p, (e) => e.kind === 'executor-exited');
  await p.stopExecutor('ex-stop');
  t.like(await exited, { executorId: 'ex-stop', expected: true });
  t.false(isAlive(pid));
  t.deepEqual(p.processes(), []);
});

test('stopExecutor kills a process that ignores SIGTERM once the grace period passes', async (t) => {
  const p = quietPlatform();
  t.teardown(() => p.shutdown());
  const inst = await p.startExecutor({ executorId: 'ex-stubborn', taskId: 't', node: 'local', devices: [dev(0)], launch: launch(ENV_SERVER, ['--ignore-sigterm']) });
  await healthy(inst.url);
  const exited = nextEvent(p, (e) => e.kind === 'executor-exited');
  await p.stopExecutor('ex-stubborn', { graceMs: 200 });
  t.like(await exited, { signal: 'SIGKILL', expected: true });
});

test('an executor asking for its previous port gets it again, and a free one when it is taken', async (t) => {
  const p = quietPlatform();
  t.teardown(() => p.shutdown());
  const first = await p.startExecutor({ executorId: 'ex-port', taskId: 't', node: 'local', devices: [dev(0)], launch: launch() });
  await healthy(first.url);
  const port = Number(new URL(first.url).port);
  await p.stopExecutor('ex-port');
  const again = await p.startExecutor({ executorId: 'ex-port', taskId: 't', node: 'local', devices: [dev(0)], launch: launch(), port });
  t.is(again.url, first.url);
  await healthy(again.url);
  const other = await p.startExecutor({ executorId: 'ex-other', taskId: 't', node: 'local', devices: [dev(1)], launch: launch(), port });
  t.not(other.url, first.url);
});

test('stopExecutor of an unknown id is a no-op', async (t) => {
  await t.notThrowsAsync(quietPlatform().stopExecutor('nope'));
});

test('a launch entry that does not exist is rejected before anything starts', async (t) => {
  const p = quietPlatform();
  const err = await t.throwsAsync(p.startExecutor({ executorId: 'ex-x', taskId: 't', node: 'local', devices: [dev(0)], launch: launch('no/such/entry.ts') }));
  t.is((err as { code?: string }).code, 'PLATFORM_ENTRY_NOT_FOUND');
  t.deepEqual(p.processes(), []);
});

test('starting a second executor with a running id is refused', async (t) => {
  const p = quietPlatform();
  t.teardown(() => p.shutdown());
  await p.startExecutor({ executorId: 'ex-dup', taskId: 't', node: 'local', devices: [dev(0)], launch: launch() });
  const err = await t.throwsAsync(p.startExecutor({ executorId: 'ex-dup', taskId: 't', node: 'local', devices: [dev(1)], launch: launch() }));
  t.is((err as { code?: string }).code, 'PLATFORM_DUPLICATE_ID');
  t.is(p.processes().length, 1);
});

test('deployAppFunction starts the entry with the spec env and its app id, and returns its URL', async (t) => {
  const p = quietPlatform();
  t.teardown(() => p.shutdown());
  const fn = await p.deployAppFunction({ appId: 'app-1', name: 'echo', source: 'ignored', launch: launch(), env: { CORNSERVE_APP_SOURCE: '/tmp/x.ts' } });
  await healthy(fn.url);
  t.like((await envOf(fn.url)).env, { CORNSERVE_APP_ID: 'app-1', CORNSERVE_APP_NAME: 'echo', CORNSERVE_APP_SOURCE: '/tmp/x.ts' });
});

test('deleteAppFunction stops it and reports an expected exit', async (t) => {
  const p = quietPlatform();
  t.teardown(() => p.shutdown());
  const fn = await p.deployAppFunction({ appId: 'app-del', name: 'x', source: '', launch: launch() });
  await healthy(fn.url);
  const exited = nextEvent(p, (e) => e.kind === 'app-function-exited');
  await p.deleteAppFunction('app-del');
  t.like(await exited, { appId: 'app-del', expected: true });
});

test('shutdown stops every child and refuses later starts', async (t) => {
  const p = quietPlatform();
  const a = await p.startExecutor({ executorId: 'ex-1', taskId: 't', node: 'local', devices: [dev(0)], launch: launch() });
  const f = await p.deployAppFunction({ appId: 'app-s', name: 's', source: '', launch: launch() });
  await Promise.all([healthy(a.url), healthy(f.url)]);
  const pids = p.processes().map((x) => x.pid);
  await p.shutdown();
  t.deepEqual(pids.filter(isAlive), []);
  const err = await t.throwsAsync(p.startExecutor({ executorId: 'ex-2', taskId: 't', node: 'local', devices: [dev(1)], launch: launch() }));
  t.is((err as { code?: string }).code, 'PLATFORM_SHUT_DOWN');
});

async function startParent() {
  const parent = spawn(process.execPath, ['--import', 'tsx', 'test/unit/control/platform/fixtures/parent.ts'], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(createInterface({ input: parent.stdout! }), 'line')) as [string];
  return { parent, pids: (JSON.parse(line) as { pids: number[] }).pids };
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`no child survives ${signal} to the parent`, async (t) => {
    const { parent, pids } = await startParent();
    t.teardown(() => pids.forEach((pid) => isAlive(pid) && process.kill(pid, 'SIGKILL')));
    t.is(pids.length, 3);
    t.true(pids.every(isAlive));
    const exited = once(parent, 'exit');
    parent.kill(signal);
    const [code, sig] = await exited;
    t.true(code !== 0 || sig !== null); // it died of (or because of) the signal
    // Gone already when the parent is: it stopped (and reaped) them before exiting, not the children's own orphan guard.
    t.deepEqual(pids.filter(isAlive), []);
  });
}

test('children stop themselves when the parent is SIGKILLed', async (t) => {
  const { parent, pids } = await startParent();
  t.teardown(() => pids.forEach((pid) => isAlive(pid) && process.kill(pid, 'SIGKILL')));
  parent.kill('SIGKILL');
  await once(parent, 'exit');
  await waitUntil('children gone', () => pids.every((pid) => !isAlive(pid)), { timeoutMs: 15_000 });
  t.pass();
});
