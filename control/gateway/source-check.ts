/**
 * Validates an app source without running user code in the gateway: the source is written to a temp
 * file and checked by a throwaway app-function process (`functions/runtime/main.ts --check FILE`),
 * bounded in time and output. The result names every problem, or lists the app's unit tasks.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseCheckOutput, type CheckResult, type TaskCheckResult } from '../../functions/runtime/check.js';
import { REPO_ROOT, RUNTIME_ENTRY } from './paths.js';

export interface SourceCheckOptions {
  /** @default 30 s */
  timeoutMs?: number;
}

const MAX_OUTPUT = 1 << 20;

/** Secrets of the control plane that user code (app sources, app functions) must not see. */
export const HIDDEN_FROM_APPS = ['CORNSERVE_ADMIN_TOKEN'];

/** This process's environment without the control plane's secrets. */
export function userCodeEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of HIDDEN_FROM_APPS) delete env[k];
  return env;
}

/** `fileName`: the user's file (its base name names it in the problems); app.ts when absent or not a plain .ts name. */
export function checkAppSource(source: string, fileName?: string, options: SourceCheckOptions = {}): Promise<CheckResult> {
  return checkSource<CheckResult>(source, '--check', 'app', options, fileName);
}

/** The same check for a registry file (defineUnitTask): its unit task definition, or its problems. */
export function checkTaskSource(source: string, options: SourceCheckOptions = {}): Promise<TaskCheckResult> {
  return checkSource<TaskCheckResult>(source, '--check-task', 'registry file', options);
}

/** A user's file name safe to write in our temp folder (a plain `name.ts`), else undefined. */
const plainTsName = (fileName: string | undefined) => {
  const name = fileName === undefined ? undefined : basename(fileName);
  return name && /^[\w.-]+\.ts$/.test(name) ? name : undefined;
};

async function checkSource<R extends { ok: boolean }>(source: string, flag: string, what: string, options: SourceCheckOptions, fileName?: string): Promise<R> {
  const dir = await mkdtemp(join(tmpdir(), 'cornserve-check-'));
  const file = join(dir, plainTsName(fileName) ?? (what === 'app' ? 'app.ts' : 'task.ts'));
  try {
    await writeFile(file, source);
    return (await runCheck<R>(file, flag, what, options.timeoutMs ?? 30_000)) as R;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function runCheck<R>(file: string, flag: string, what: string, timeoutMs: number): Promise<R | { ok: false; problems: string[] }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', RUNTIME_ENTRY, flag, file], {
      cwd: REPO_ROOT,
      env: { ...userCodeEnv(), CORNSERVE_LOG_LEVEL: 'error' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { if (stdout.length < MAX_OUTPUT) stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { if (stderr.length < MAX_OUTPUT) stderr += d.toString(); });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (timedOut) return resolve({ ok: false, problems: [`loading the ${what} took longer than ${timeoutMs} ms (does the module block at top level?)`] });
      const result = parseCheckOutput<R>(stdout);
      if (result) return resolve(result);
      const tail = stderr.trim().split('\n').slice(-5).join(' | ');
      resolve({ ok: false, problems: [`the ${what} could not be loaded (check process exited with ${signal ?? code}): ${tail}`] });
    });
  });
}
