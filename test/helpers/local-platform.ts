/**
 * Local-platform fixtures for control-plane tests: a LocalPlatform whose child output is collected (not
 * printed), launch specs for the echo executor and the failing fixtures, and device refs.
 */
import { LocalPlatform, type LocalPlatformOptions } from '../../control/platform/local.js';
import type { LaunchSpec } from '../../lib/descriptor.js';
import type { DeviceRef } from '../../lib/store.js';
import { repoRoot } from './repo.js';

export interface QuietPlatform extends LocalPlatform {
  /** Every child output line so far, as [prefix, line]. */
  readonly lines: Array<[string, string]>;
}

export function quietPlatform(options: Partial<LocalPlatformOptions> = {}): QuietPlatform {
  const lines: Array<[string, string]> = [];
  const p = new LocalPlatform({ repoRoot, devices: 4, logSink: (prefix, line) => void lines.push([prefix, line]), ...options });
  return Object.assign(p, { lines });
}

export const dev = (globalRank: number, node = 'local', localRank = globalRank): DeviceRef => ({ node, globalRank, localRank });

export const echoLaunch = (serviceTimeMs = 0, devicesPerExecutor = 1): LaunchSpec => ({
  kind: 'echo',
  entry: 'executors/echo/main.ts',
  image: 'cornserve/echo',
  args: ['--service-time-ms', String(serviceTimeMs)],
  devicesPerExecutor,
});

/** An executor entry that prints a line and exits with code 3 at once. */
export const exitAtOnceLaunch = (devicesPerExecutor = 1): LaunchSpec => ({
  kind: 'broken',
  entry: 'test/helpers/fixtures/exit-at-once.ts',
  image: 'none',
  args: [],
  devicesPerExecutor,
});

/** The echo server, told to exit at start when its ranks include `failRank` or while `failIfExists` exists, or to wait while `holdWhileExists` exists. */
export const flakyLaunch = (options: { failRank?: number; failIfExists?: string; holdWhileExists?: string } = {}, devicesPerExecutor = 1): LaunchSpec => ({
  kind: 'flaky',
  entry: 'test/helpers/fixtures/flaky-executor.ts',
  image: 'none',
  args: [
    ...(options.failRank !== undefined ? ['--fail-rank', String(options.failRank)] : []),
    ...(options.failIfExists !== undefined ? ['--fail-if-exists', options.failIfExists] : []),
    ...(options.holdWhileExists !== undefined ? ['--hold-while-exists', options.holdWhileExists] : []),
  ],
  devicesPerExecutor,
});

/** POST /echo on an executor; `serviceTimeMs` simulates work. */
export async function echo(url: string, text: string, serviceTimeMs = 0): Promise<{ status: number; body: unknown }> {
  const res = await fetch(new URL('/echo', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text, service_time_ms: serviceTimeMs }),
  });
  return { status: res.status, body: await res.json() };
}
