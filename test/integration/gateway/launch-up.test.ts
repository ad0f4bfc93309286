/**
 * The one launcher of `cornserve up` as a child process (control/compose/launch-up.ts), which the benchmarks, the live
 * cross-check and the "point it at a folder" tests use: ready only once the gateway answers, an error that shows
 * why when `up` dies or readiness fails, and nothing left running after stop() or a failed start.
 */
import test, { type ExecutionContext } from 'ava';
import { readFileSync } from 'node:fs';
import { launchUp } from '../../../control/compose/launch-up.js';
import { pidListeningOn, processLabel, processTree } from '../../../bench/client/proc.js';
import { freePort } from '../../../lib/net.js';
import { waitUntil } from '../../../lib/wait.js';

/** The processes of `pids` still running (a zombie is dead, only not yet reaped by whoever inherited it), with their command. */
function running(pids: number[]): string[] {
  return pids.flatMap((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z' ? [] : [`${pid} ${processLabel(pid)}`];
    } catch {
      return [];
    }
  });
}

/** Waits (bounded) until none of `pids` runs: children notice their parent's exit on their own, within a poll. */
async function allGone(t: ExecutionContext, pids: number[]): Promise<void> {
  await waitUntil('every process gone', () => running(pids).length === 0, { timeoutMs: 20_000, intervalMs: 100 })
    .catch(() => t.fail(`left running: ${running(pids).join('; ')}`));
  t.pass();
}

test('launchUp resolves once the gateway answers, names the dispatcher, and stop() ends up and every child with exit code 0', async (t) => {
  t.timeout(240_000);
  const up = await launchUp({ args: ['--devices', '1', '--no-autoscale'], env: { CORNSERVE_ADMIN_TOKEN: 'launch-up-test' } });
  const tree = processTree(up.pid);
  t.true(tree.length > 1, 'up runs its sidecar as a child');
  t.true(up.running);
  t.like(await (await fetch(`${up.url}/health`)).json(), { status: 'ok', store: { backend: 'memory', state: 'ok' } });
  t.regex(up.dispatcherUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.regex(up.stdout(), /Cornserve is up/);
  const exit = await up.stop();
  t.is(exit.code, 0, up.stderr());
  t.false(up.running);
  t.is(await up.stop(), exit, 'stop() is idempotent');
  await allGone(t, tree);
});

test('launchUp rejects with the tail of stderr when up exits before it is ready', async (t) => {
  t.timeout(120_000);
  const e = await t.throwsAsync(launchUp({ args: ['--devices', 'bogus'] }));
  t.regex(e!.message, /cornserve up \(pid \d+\) exited with code 1 before it was ready/);
  t.regex(e!.message, /--devices must be a non-negative integer or 'auto', got 'bogus'/);
});

test('a readiness check that fails stops up and its children before launchUp rejects', async (t) => {
  t.timeout(240_000);
  const port = await freePort();
  let tree: number[] = [];
  const e = await t.throwsAsync(launchUp({
    port,
    args: ['--devices', '1', '--no-autoscale'],
    readyWhen: {
      what: 'never',
      test: () => {
        tree = processTree(pidListeningOn(port)!);
        throw new Error('not this platform');
      },
    },
  }));
  t.regex(e!.message, /not this platform/);
  t.true(tree.length > 1, 'up was running with children');
  await allGone(t, tree);
});

test('launchUp gives up after readyTimeoutMs and leaves nothing running', async (t) => {
  t.timeout(120_000);
  const e = await t.throwsAsync(launchUp({ args: ['--devices', '1'], readyTimeoutMs: 1 }));
  t.regex(e!.message, /did not complete within 1 ms/);
  const pid = Number(/pid (\d+)/.exec(e!.message)![1]);
  await allGone(t, [pid]);
});
