/**
 * Local device discovery for `cornserve up --devices auto`: the GPUs `nvidia-smi` lists become the node's devices
 * (kind 'cuda', local rank = GPU index = ordinal); without nvidia-smi (or with no GPU) the node gets virtual CPU
 * devices. `parseNvidiaSmi` is pure (unit-tested on captured output); `discoverDevices` runs the binary.
 */
import { execFile } from 'node:child_process';
import type { DeviceKind } from '../../lib/platform.js';

export const NVIDIA_SMI_ARGS = ['--query-gpu=index,name,memory.total', '--format=csv,noheader'];
/** CPU "devices" when no GPU is found: the same count as `--devices`' default. */
export const CPU_FALLBACK_DEVICES = 4;

export interface Gpu {
  index: number;
  name: string;
  /** MiB, as nvidia-smi reports memory.total. */
  memoryMiB: number;
}

/** Parses `nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader` ("0, NVIDIA A100-SXM4-80GB, 81920 MiB"). */
export function parseNvidiaSmi(text: string): Gpu[] {
  const gpus: Gpu[] = [];
  for (const [n, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (!line) continue;
    const cells = line.split(',').map((c) => c.trim());
    // GPU names carry no commas in practice; keep any that do by joining the middle cells.
    const index = Number(cells[0]);
    const memory = /^(\d+)\s*MiB$/i.exec(cells[cells.length - 1] ?? '');
    const name = cells.slice(1, -1).join(', ');
    if (cells.length < 3 || !Number.isInteger(index) || index < 0 || !memory || !name) {
      throw new Error(`nvidia-smi output line ${n + 1} is not "index, name, memory.total MiB": '${line}'`);
    }
    gpus.push({ index, name, memoryMiB: Number(memory[1]) });
  }
  return gpus.sort((a, b) => a.index - b.index);
}

export interface DiscoveredDevices {
  kind: DeviceKind;
  count: number;
  gpus: Gpu[];
  /** Why the devices are what they are, for the log line. */
  reason: string;
}

export type RunCommand = (file: string, args: string[]) => Promise<string>;

/** Runs `file` (found on PATH) with a 10 s bound; rejects with its error (ENOENT when absent). */
export const runCommand: RunCommand = (file, args) =>
  new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 10_000, encoding: 'utf8' }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
  });

/** GPUs from nvidia-smi (binary `nvidiaSmi`, found on PATH by default), else CPU_FALLBACK_DEVICES virtual devices. */
export async function discoverDevices(opts: { nvidiaSmi?: string; run?: RunCommand } = {}): Promise<DiscoveredDevices> {
  const bin = opts.nvidiaSmi ?? 'nvidia-smi';
  const cpu = (why: string): DiscoveredDevices => ({ kind: 'cpu', count: CPU_FALLBACK_DEVICES, gpus: [], reason: `${why}: ${CPU_FALLBACK_DEVICES} virtual CPU devices` });
  let out: string;
  try {
    out = await (opts.run ?? runCommand)(bin, NVIDIA_SMI_ARGS);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    return cpu(err.code === 'ENOENT' ? `${bin} not found` : `${bin} failed (${err.message.split('\n')[0]})`);
  }
  const gpus = parseNvidiaSmi(out);
  if (!gpus.length) return cpu(`${bin} lists no GPU`);
  return { kind: 'cuda', count: gpus.length, gpus, reason: `${gpus.length} GPU(s) from ${bin}: ${gpus.map((g) => `${g.index} ${g.name} ${g.memoryMiB} MiB`).join('; ')}` };
}

/** `--devices` value: a count of virtual CPU devices, or 'auto' (discoverDevices). */
export async function devicesOption(value: string, opts: Parameters<typeof discoverDevices>[0] = {}): Promise<DiscoveredDevices> {
  if (value.trim() === 'auto') return discoverDevices(opts);
  const count = Number(value);
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`--devices must be a non-negative integer or 'auto', got '${value}'`);
  return { kind: 'cpu', count, gpus: [], reason: `--devices ${count}: virtual CPU devices` };
}
