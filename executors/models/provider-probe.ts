/**
 * The start-up probe of a GPU execution provider: provider-check.ts --session in a child process, bounded by a
 * timeout, so a provider that crashes the process (a driver fault) or hangs (a wedged GPU) ends as a clear
 * failure instead of taking the executor down. onnxruntime's exception says little ("Failed to load shared
 * library"); its log lines on stderr name the library the loader could not open, so both are read.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { diagnoseProbeFailure, type GpuProvider } from './providers.js';
import type { ProbeOutcome } from './session-options.js';
import type { ProviderCheck } from './provider-check.js';

const TSX = import.meta.resolve('tsx');
const CHECK_SCRIPT = fileURLToPath(new URL('./provider-check.ts', import.meta.url));
/** Creating a first CUDA session loads cuDNN and builds kernels: seconds, not minutes. */
export const DEFAULT_PROBE_TIMEOUT_MS = 60_000;

export interface ProbeOptions {
  timeoutMs?: number;
  /** The script run in the child (default provider-check.ts); tests give one that crashes or hangs. */
  script?: string;
  env?: NodeJS.ProcessEnv;
}

// eslint-disable-next-line no-control-regex
const stripAnsi = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');

/** The onnxruntime / Dawn lines worth quoting from the child's stderr (errors and warnings, not our own logs). */
function runtimeLines(stderr: string): string[] {
  return stripAnsi(stderr).split('\n').map((l) => l.trim()).filter((l) => /\[E:onnxruntime|Warning: |Error: |cannot open shared object/.test(l));
}

function parseCheck(stdout: string): ProviderCheck | undefined {
  const line = stdout.trim().split('\n').pop();
  try {
    return line ? (JSON.parse(line) as ProviderCheck) : undefined;
  } catch {
    return undefined;
  }
}

/** Probes `provider` on device `ordinal`: ok, or onnxruntime's error with the missing library and the fix. */
export function probeProvider(provider: GpuProvider, ordinal: number, opts: ProbeOptions = {}): Promise<ProbeOutcome> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const args = ['--import', TSX, opts.script ?? CHECK_SCRIPT, provider, '--session', '--device', String(ordinal)];
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 4 << 20, env: opts.env ?? process.env, encoding: 'utf8' }, (err, stdout, stderr) => {
      const check = parseCheck(stdout);
      if (check?.ok) return resolve({ ok: true, provider, ordinal });
      const logs = runtimeLines(stderr);
      let error: string;
      if (check?.session && !check.session.ok) error = check.session.error.trim();
      else if (check && !check.ok) error = `${check.files.missing.join(', ')} missing from ${check.files.dir}`;
      else if (err?.killed) error = `the probe session did not finish within ${timeoutMs} ms (the GPU or its driver hangs)`;
      else if (err?.signal) error = `the probe process crashed (${err.signal})`;
      else error = `the probe process exited with ${err?.code ?? 0} without an answer`;
      if (!check && stderr.trim()) {
        // No answer: the first lines usually say why, the last ones where it stopped.
        const lines = stripAnsi(stderr).trim().split('\n');
        logs.push(...new Set([...lines.slice(0, 2), ...lines.slice(-2)]));
      }
      const detail = [error, ...logs.filter((l) => !error.includes(l))].join(' | ');
      const { missing, fix } = diagnoseProbeFailure(provider, detail);
      resolve({ ok: false, provider, ordinal, error: detail, ...(missing ? { missing } : {}), fix });
    });
  });
}
