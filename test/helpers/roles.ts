/**
 * Control-plane roles as real child processes (`cornserve resource-manager`, `cornserve gateway`, the
 * dispatcher's main.ts) on loopback ports, for the cluster-roles tests. Each waits for GET /health and
 * keeps the output's tail for failure messages; stop() sends SIGTERM (SIGKILL after 15 s) and waits.
 */
import type { ChildProcess } from 'node:child_process';
import { startServerProcess } from './server-process.js';

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
  const p = await startServerProcess({
    what: `${entry} ${args[0] ?? ''}`,
    entry,
    args: (p) => [...args, '--port', String(p)],
    env: { CORNSERVE_LOG_LEVEL: 'warn', ...env },
    ...(port ? { port } : {}),
    portEnv: false,
    stdout: true,
    startTimeoutMs: 120_000,
    killAfterMs: 15_000,
  });
  return { url: p.url, port: p.port, child: p.child, output: p.output, stop: p.stop };
}

export const CLI = 'control/cli/main.ts';
export const DISPATCHER = 'control/dispatcher/main.ts';

export { writeKubeconfig } from './fake-kube-api.js';
