/**
 * Validates an app source without running user code in the gateway: the source is written to a temp
 * file and checked by a throwaway app-function process (`functions/runtime/main.ts --check FILE`),
 * bounded in time and output. The result names every problem, or lists the app's unit tasks.
 * The process gets a minimal environment (checkEnv: no secrets, no settings of the control plane), a bounded V8 heap
 * and, through util-linux `prlimit`, a bound on its CPU time: a module that allocates or spins forever is refused.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { parseCheckOutput, type CheckResult, type TaskCheckResult } from '../../functions/runtime/check.js';
import { REPO_ROOT, RUNTIME_ENTRY } from './paths.js';
import { REGISTRY_DIR_ENV } from '../../functions/runtime/load.js';

export interface SourceCheckOptions {
  /** @default 30 s */
  timeoutMs?: number;
  /** The check process's V8 heap bound. @default 512 MiB */
  heapMiB?: number;
  /** Its CPU-time bound (seconds; SIGXCPU, then SIGKILL past it). @default 20 */
  cpuSeconds?: number;
}

const MAX_OUTPUT = 1 << 20;

/** Secrets of the control plane that user code (app sources, app functions) must not see. */
export const HIDDEN_FROM_APPS = ['CORNSERVE_ADMIN_TOKEN'];

/** The only variables the check process inherits (what node and tsx need to run), plus the registry folder. */
const CHECK_ENV_KEEP = ['PATH', 'HOME', 'TMPDIR', 'LANG', REGISTRY_DIR_ENV];

/** The check process's environment: the few variables it needs, never the control plane's secrets or settings. */
export function checkEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { CORNSERVE_LOG_LEVEL: 'error' };
  for (const k of CHECK_ENV_KEEP) if (process.env[k] !== undefined && !HIDDEN_FROM_APPS.includes(k)) env[k] = process.env[k];
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
    return (await runCheck<R>(file, flag, what, { timeoutMs: options.timeoutMs ?? 30_000, heapMiB: options.heapMiB ?? 512, cpuSeconds: options.cpuSeconds ?? 20 })) as R;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface CheckBounds { timeoutMs: number; heapMiB: number; cpuSeconds: number }

function runCheck<R>(file: string, flag: string, what: string, { timeoutMs, heapMiB, cpuSeconds }: CheckBounds): Promise<R | { ok: false; problems: string[] }> {
  return new Promise((resolve) => {
    const node = [process.execPath, `--max-old-space-size=${heapMiB}`, '--import', 'tsx', RUNTIME_ENTRY, flag, file];
    // prlimit sets RLIMIT_CPU (soft: SIGXCPU, hard a second later: SIGKILL) and then runs node in its place.
    const child = spawn('prlimit', [`--cpu=${cpuSeconds}:${cpuSeconds + 1}`, '--', ...node], { cwd: REPO_ROOT, env: checkEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    child.on('error', (err) => resolve({ ok: false, problems: [`the ${what} could not be checked: ${err.message} (the check runs under util-linux prlimit)`] }));
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
      if (signal === 'SIGXCPU' || signal === 'SIGKILL') return resolve({ ok: false, problems: [`loading the ${what} used more than ${cpuSeconds} s of CPU time (does the module loop at top level?)`] });
      if (/heap out of memory/.test(stderr)) return resolve({ ok: false, problems: [`loading the ${what} used more than ${heapMiB} MiB of memory (does the module allocate at top level?)`] });
      resolve({ ok: false, problems: [`the ${what} could not be loaded (check process exited with ${signal ?? code}): ${tail}`] });
    });
  });
}
