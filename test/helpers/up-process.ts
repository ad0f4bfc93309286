/**
 * `cornserve up` as a child process over a scratch folder of models and apps (the "point it at a folder" tests):
 *
 *   const up = await startUpWithModels({ prefix: 'cs-embed-', app: 'embed', models: { 'tiny-clip': dir }, apps: { 'embed.ts': source } });
 *   await fetch(`${up.url}/app/invoke/embed`, ...);
 *   t.is(await up.stop(), 0);
 *
 * Started by the platform's launcher (control/compose/launch-up.ts), which also waits (bounded) until `up` prints the
 * app's name, i.e. registered it; the scratch folder goes with `cleanup()`.
 */
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchUp } from '../../control/compose/launch-up.js';

export interface UpWithModels {
  url: string;
  port: number;
  pid: number;
  /** The scratch models folder passed as --models. */
  models: string;
  stderr(): string;
  /** SIGTERM; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** Stops a still running `up` and removes the scratch folder (for test.after.always). */
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
  const registered = new RegExp(`\\b${o.app}\\b`);
  const up = await launchUp({
    args: ['--devices', String(o.devices ?? 2), '--models', models, '--apps', apps],
    env: { CORNSERVE_ADMIN_TOKEN: `${o.prefix}token`, CORNSERVE_MODELS: undefined },
    readyWhen: { what: `registered ${o.app}`, test: (stdout) => registered.test(stdout) },
    readyTimeoutMs: 240_000,
  }).catch(async (e: Error) => {
    await rm(scratch, { recursive: true, force: true });
    throw e;
  });
  return {
    url: up.url, port: up.port, pid: up.pid, models, stderr: up.stderr,
    async stop() {
      return (await up.stop()).code;
    },
    async cleanup() {
      await up.stop();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}
