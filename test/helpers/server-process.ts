/**
 * One way to start a server as a REAL child process for a test: `node --import tsx <entry> ...args` in the repo,
 * on a free loopback port (passed as $PORT unless `portEnv: false`, and to `args` / `env` when they are functions
 * of the port), waiting until its health path answers. The output's tail is kept for failure messages; the child
 * is SIGKILLed if the test process exits first. The executor fixtures (eric, geri, echo, descriptor launches) and the control-plane roles use it.
 *
 *   const p = await startServerProcess({ entry: 'executors/echo/main.ts', args: ['--service-time-ms', '0'], what: 'echo' });
 *   await fetch(`${p.url}/info`);
 *   await p.stop();        // SIGTERM, SIGKILL after killAfterMs; idempotent
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EXECUTOR_ENV } from '../../lib/descriptor.js';
import { freePort } from '../../lib/net.js';
import { waitUntil } from '../../lib/wait.js';
import { repoRoot } from './repo.js';

export interface ServerProcessOptions {
  /** The script, relative to the repo root. */
  entry: string;
  /** Its arguments, or a function of the port it gets. */
  args?: string[] | ((port: number) => string[]);
  /** Added to this process's environment (or a function of the port); an `undefined` value removes the variable. */
  env?: Record<string, string | undefined> | ((port: number) => Record<string, string | undefined>);
  /** @default a free port */
  port?: number;
  /** Pass the port as $PORT (what executors read). Off for processes that get it in `args` and whose children
   *  must not inherit it. @default true */
  portEnv?: boolean;
  /** @default '/health' */
  healthPath?: string;
  /** Whether a health answer means "started". @default any 2xx */
  healthy?: (status: number) => boolean;
  /** @default 60000 (a loaded 2-core machine can take long to start node + tsx) */
  startTimeoutMs?: number;
  /** How long stop() waits after SIGTERM before SIGKILL. @default 10000 */
  killAfterMs?: number;
  /** Keep stdout in output() too (else it is ignored). @default false */
  stdout?: boolean;
  /** Names the process in errors. @default entry */
  what?: string;
}

export interface ServerProcess {
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** The last few kB of its stderr (and stdout with `stdout: true`). */
  output(): string;
  /** GET the health path: its status, or 0 when nothing answers within 2 s. */
  health(): Promise<number>;
  /** Sends `signal` (default SIGKILL: a crash) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGTERM, SIGKILL after killAfterMs, and wait; idempotent. */
  stop(): Promise<void>;
}

const OUTPUT_TAIL = 8000;

export async function startServerProcess(o: ServerProcessOptions): Promise<ServerProcess> {
  const port = o.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const what = `${o.what ?? o.entry} on port ${port}`;
  const args = typeof o.args === 'function' ? o.args(port) : (o.args ?? []);
  const env: Record<string, string | undefined> = { ...process.env, ...(typeof o.env === 'function' ? o.env(port) : o.env), ...(o.portEnv === false ? {} : { [EXECUTOR_ENV.port]: String(port) }) };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const child = spawn(process.execPath, ['--import', 'tsx', o.entry, ...args], { cwd: repoRoot, env, stdio: ['ignore', o.stdout ? 'pipe' : 'ignore', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => { out = (out + d.toString()).slice(-OUTPUT_TAIL); };
  child.stdout?.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const onExit = () => child.kill('SIGKILL');
  process.once('exit', onExit);
  const ended = () => child.exitCode !== null || child.signalCode !== null;
  const end = async (signal: NodeJS.Signals, killAfterMs?: number) => {
    if (!ended()) child.kill(signal);
    const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    await exited;
    clearTimeout(timer);
    process.removeListener('exit', onExit);
  };
  const health = async () => {
    try {
      return (await fetch(`${url}${o.healthPath ?? '/health'}`, { signal: AbortSignal.timeout(2000) })).status;
    } catch {
      return 0;
    }
  };
  const healthy = o.healthy ?? ((s: number) => s >= 200 && s < 300);
  try {
    await waitUntil(what, async () => {
      if (ended()) throw new Error(`${what} exited with ${child.exitCode ?? child.signalCode}`);
      const s = await health();
      return s !== 0 && healthy(s);
    }, { timeoutMs: o.startTimeoutMs ?? 60_000, intervalMs: 100 });
  } catch (e) {
    await end('SIGKILL');
    throw new Error(`${(e as Error).message}\n${out}`);
  }
  return {
    url,
    port,
    child,
    output: () => out,
    health,
    kill: (signal = 'SIGKILL') => end(signal),
    stop: () => end('SIGTERM', o.killAfterMs ?? 10_000),
  };
}
