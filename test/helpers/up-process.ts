/**
 * `cornserve up` as a child process over a scratch folder of models and apps (the "point it at a folder" tests):
 *
 *   const up = await startUpWithModels({ prefix: 'cs-embed-', app: 'embed', models: { 'tiny-clip': dir }, apps: { 'embed.ts': source } });
 *   await fetch(`${up.url}/app/invoke/embed`, ...);
 *   t.is(await up.stop(), 0);
 *
 * Waits (bounded) until `up` prints the app's name, i.e. registered it; the scratch folder goes with `cleanup()`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../lib/net.js';
import { waitUntil } from '../../lib/wait.js';
import { repoRoot } from './repo.js';

export interface UpWithModels {
  url: string;
  port: number;
  child: ChildProcess;
  /** The scratch models folder passed as --models. */
  models: string;
  stderr(): string;
  /** SIGTERM; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** Kills a still running `up` and removes the scratch folder (for test.after.always). */
  cleanup(): Promise<void>;
}

export async function startUpWithModels(o: {
  prefix: string;
  /** The app name `up` prints once registered. */
  app: string;
  /** Folder name under --models → the folder copied there. */
  models: Record<string, string>;
  /** File name under --apps → its source. */
  apps: Record<string, string>;
  devices?: number;
}): Promise<UpWithModels> {
  const scratch = await mkdtemp(join(tmpdir(), o.prefix));
  const models = join(scratch, 'models');
  const apps = join(scratch, 'apps');
  await mkdir(apps, { recursive: true });
  for (const [name, dir] of Object.entries(o.models)) await cp(dir, join(models, name), { recursive: true });
  for (const [name, source] of Object.entries(o.apps)) await writeFile(join(apps, name), source);
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, CORNSERVE_LOG_LEVEL: 'warn', CORNSERVE_ADMIN_TOKEN: `${o.prefix}token` };
  delete env.CORNSERVE_MODELS;
  const child = spawn(process.execPath, ['--import', 'tsx', 'control/cli/main.ts', 'up', '--port', String(port), '--devices', String(o.devices ?? 2), '--models', models, '--apps', apps], { cwd: repoRoot, env });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const cleanup = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await rm(scratch, { recursive: true, force: true });
  };
  const registered = new RegExp(`\\b${o.app}\\b`);
  await waitUntil(`up registered ${o.app}`, () => registered.test(stdout) || child.exitCode !== null, { timeoutMs: 240_000 }).catch(async (e: Error) => {
    await cleanup();
    throw new Error(`${e.message}\nstdout: ${stdout}\nstderr: ${stderr.slice(-3000)}`);
  });
  if (child.exitCode !== null) {
    await cleanup();
    throw new Error(`up exited with ${child.exitCode}\nstderr: ${stderr.slice(-3000)}`);
  }
  return {
    url: `http://127.0.0.1:${port}`, port, child, models, stderr: () => stderr,
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
    cleanup,
  };
}
