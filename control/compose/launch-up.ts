/**
 * `cornserve up` as a child process, the way a user runs it, for whatever drives a whole platform from outside
 * (benchmarks, the live cross-check experiment, the "point it at a folder" tests): one launcher, so they all start,
 * wait and stop it alike.
 *
 *   const up = await launchUp({ args: ['--devices', '2'], env: { CORNSERVE_ADMIN_TOKEN: token } });
 *   await fetch(`${up.url}/app/list`);
 *   await up.stop();      // SIGTERM (up drains and stops its children), SIGKILL after the grace; idempotent
 *
 * Ready means: `up` printed its banner (which names the dispatcher) and its gateway answers /health, plus the
 * caller's `readyWhen` on stdout (e.g. an --apps app registered, which `up` does after the banner). The wait is
 * bounded; if `up` exits or the time passes first, the error carries the tail of its stderr and nothing is left
 * running. The process is a ManagedChild (control/platform/child.ts): its own process group, so after it exits
 * whatever is left in that group is killed too; and it preloads the orphan guard, so if this process dies without
 * stopping it (SIGKILL), `up` notices and stops itself and its executors.
 */
import { fileURLToPath } from 'node:url';
import { freePort } from '../../lib/net.js';
import { probe } from '../../lib/unix-url.js';
import { waitUntil } from '../../lib/wait.js';
import { guardChildren } from '../platform/exit-guard.js';
import { ManagedChild, type ExitInfo, type LogSink } from '../platform/child.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ORPHAN_GUARD = './control/platform/orphan-guard.ts';
/** What `up` prints once the platform runs (control/compose/up-output.ts printBanner). */
const BANNER = /Cornserve is up: gateway \S+\s+\(dispatcher (\S+),/;
/** Bytes of stdout kept (the banner and the app usages: small) and of stderr shown in errors. */
const STDOUT_KEEP = 64_000;
const STDERR_TAIL = 4_000;

export interface LaunchUpOptions {
  /** Arguments after `up` (--devices, --models, --apps, --no-autoscale ...); the launcher adds --port. */
  args?: string[];
  /** Gateway port. @default a free one */
  port?: number;
  /** Over this process's environment; an `undefined` value removes the variable. CORNSERVE_LOG_LEVEL defaults to warn. */
  env?: Record<string, string | undefined>;
  /** Also wait until stdout so far passes this (`what` names it in the timeout error). */
  readyWhen?: { what: string; test: (stdout: string) => boolean };
  /** @default 120000 (a loaded 2-core machine takes long to start node + tsx, more with --apps) */
  readyTimeoutMs?: number;
  /** How long stop() lets `up` drain and stop its children after SIGTERM before SIGKILL. @default 60000 */
  stopGraceMs?: number;
  /** Where its output lines go besides the launcher's own buffers. @default nowhere */
  sink?: LogSink;
}

export interface LaunchedUp {
  /** The gateway. */
  readonly url: string;
  readonly port: number;
  /** The dispatcher, from the banner. */
  readonly dispatcherUrl: string;
  readonly pid: number;
  /** Its stdout so far (the first STDOUT_KEEP bytes). */
  stdout(): string;
  /** The tail of its stderr. */
  stderr(): string;
  readonly running: boolean;
  /** SIGTERM, SIGKILL after stopGraceMs, then SIGKILL whatever is left in its process group; idempotent. */
  stop(): Promise<ExitInfo>;
}

export async function launchUp(o: LaunchUpOptions = {}): Promise<LaunchedUp> {
  const port = o.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = { ...process.env, CORNSERVE_LOG_LEVEL: 'warn', ...o.env, CORNSERVE_PARENT_PID: String(process.pid) };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  let stdout = '';
  let stderr = '';
  const child = await ManagedChild.spawn({
    name: 'cornserve up',
    command: process.execPath,
    args: ['--import', 'tsx', '--import', ORPHAN_GUARD, 'control/cli/main.ts', 'up', '--port', String(port), ...(o.args ?? [])],
    cwd: REPO_ROOT,
    env,
    sink: (prefix, line, stream) => {
      if (stream === 'stdout') { if (stdout.length < STDOUT_KEEP) stdout += `${line}\n`; }
      else stderr = `${stderr}${line}\n`.slice(-STDERR_TAIL);
      o.sink?.(prefix, line, stream);
    },
  });
  const pid = child.pid;
  // After `up` is gone, anything still in its process group (a descendant it did not put in a group of its own).
  const sweepGroup = () => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch { /* ESRCH: the group is empty */ }
  };
  let stopping: Promise<ExitInfo> | undefined;
  const stop = () => (stopping ??= child.stop(o.stopGraceMs ?? 60_000).then((exit) => {
    sweepGroup();
    unguard();
    return exit;
  }));
  // Ctrl-C or exit of this process stops `up` too (the orphan guard covers a SIGKILL of this process).
  const unguard = guardChildren({ killAll: () => { child.kill(); sweepGroup(); }, shutdown: async () => { await stop(); } });

  const ms = o.readyTimeoutMs ?? 120_000;
  const healthy = () => probe(`${url}/health`, 2_000).then((status) => status === 200, () => false);
  let dispatcherUrl = '';
  try {
    await waitUntil(`cornserve up (pid ${pid}) on port ${port}${o.readyWhen ? ` (${o.readyWhen.what})` : ''}`, async () => {
      if (!child.running) {
        const exit = await child.exited;
        throw new Error(`cornserve up (pid ${pid}) exited with ${exit.signal ?? `code ${exit.code}`} before it was ready`);
      }
      const banner = BANNER.exec(stdout);
      if (!banner || !(await healthy()) || (o.readyWhen && !o.readyWhen.test(stdout))) return false;
      dispatcherUrl = banner[1]!;
      return true;
    }, { timeoutMs: ms, intervalMs: 100 });
  } catch (e) {
    await stop();
    throw new Error(`${(e as Error).message}\nstdout: ${stdout.slice(-1_000)}\nstderr: ${stderr}`);
  }
  return {
    url, port, dispatcherUrl, pid,
    stdout: () => stdout,
    stderr: () => stderr,
    get running() { return child.running; },
    stop,
  };
}
