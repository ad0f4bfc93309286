/**
 * Control-plane roles as real child processes (`cornserve resource-manager`, `cornserve gateway`, the
 * dispatcher's main.ts) on loopback ports, for the cluster-roles tests. Each waits for GET /health and
 * keeps the output's tail for failure messages; stop() sends SIGTERM (SIGKILL after 15 s) and waits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../lib/net.js';
import { waitUntil } from '../../lib/wait.js';
import { repoRoot } from './repo.js';

export interface RoleProcess {
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** The last lines of its stdout + stderr. */
  output(): string;
  stop(): Promise<void>;
}

/** Starts `node --import tsx <entry> ...args --port <free>` and waits for its /health. */
export async function startRole(entry: string, args: string[], env: Record<string, string> = {}, port?: number): Promise<RoleProcess> {
  const p = port ?? (await freePort());
  const child = spawn(process.execPath, ['--import', 'tsx', entry, ...args, '--port', String(p)], {
    cwd: repoRoot,
    env: { ...process.env, CORNSERVE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-8000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = `http://127.0.0.1:${p}`;
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await waitUntil(`${entry} ${args[0] ?? ''} on ${url}`, async () => {
      if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`);
      return fetch(`${url}/health`).then((r) => r.ok, () => false);
    }, { timeoutMs: 120_000 });
  } catch (e) {
    await stop();
    throw new Error(`${(e as Error).message}\n${out}`);
  }
  return { url, port: p, child, output: () => out, stop };
}

export const CLI = 'control/cli/main.ts';
export const DISPATCHER = 'control/dispatcher/main.ts';

export { writeKubeconfig } from './fake-kube-api.js';
