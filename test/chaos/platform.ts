/**
 * What the chaos and soak runs share: `make run`'s platform (`cornserve up --apps functions/apps`) started the
 * way a user starts it, and `cornserve bench` run against it as a child process, its results.json read back.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type LaunchedUp, launchUp } from '../../control/compose/launch-up.js';
import { ManagedChild, stderrSink } from '../../control/platform/child.js';
import type { RunResults, SoakResults } from '../../bench/report/results.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The apps the mixed load uses; `up` prints each name once it registered it. */
const LOAD_APPS = ['mllm', 'image-variation'];

/** `cornserve up --apps functions/apps --devices 12 [extra]` on a free port, ready once the load's apps are registered. */
export function startRunPlatform(extra: string[] = []): Promise<LaunchedUp> {
  return launchUp({
    args: ['--apps', 'functions/apps', '--devices', '12', ...extra],
    readyWhen: { what: `apps ${LOAD_APPS.join(', ')} registered`, test: (out) => LOAD_APPS.every((a) => new RegExp(`\\b${a}\\b`).test(out)) },
    readyTimeoutMs: 600_000, // ten executors starting on a loaded 2-core machine
  });
}

/** One `cornserve bench` run against `gatewayUrl`; resolves with its results.json. */
export async function runBench(gatewayUrl: string, resultDir: string, args: string[]): Promise<RunResults & { soak?: SoakResults }> {
  const child = await ManagedChild.spawn({
    name: 'bench',
    command: process.execPath,
    args: ['--import', 'tsx', 'control/cli/main.ts', 'bench', '--result-dir', resultDir, '--no-plots', ...args],
    cwd: REPO_ROOT,
    env: { ...process.env, CORNSERVE_GATEWAY_URL: gatewayUrl },
    sink: stderrSink,
  });
  const exit = await child.exited;
  if (exit.code !== 0) throw new Error(`cornserve bench exited with ${exit.signal ?? `code ${exit.code}`}: ${exit.logTail.slice(-5).join(' | ')}`);
  return JSON.parse(await readFile(join(resultDir, 'results.json'), 'utf8')) as RunResults & { soak?: SoakResults };
}

/** A folder under bench-results/ (ignored by git) named after the run and the time. */
export const resultDirOf = (run: string) => join(REPO_ROOT, 'bench-results', `${run}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
