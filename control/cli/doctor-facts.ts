/**
 * What `cornserve doctor` looks at on this machine, gathered once (all the I/O of the command): Node and npm, the
 * sidecar addon, onnxruntime-node and its provider libraries, a probe session per GPU provider, GPUs, CUDA and
 * Vulkan libraries, llama.cpp binaries, Redis, /dev/shm, and the model folders. Each check is bounded (commands
 * time out after 10 s, probes after their own bound) and records what it found, never throws.
 */
import { existsSync, readFileSync, readdirSync, statfsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { discoverDevices, runCommand, type Gpu } from '../platform/gpus.js';
import { GPU_PROVIDERS, EXECUTION_PROVIDER_ENV, ortBindingDir, providerFiles, type GpuProvider, type ProviderFiles } from '../../executors/models/providers.js';
import { probeProvider } from '../../executors/models/provider-probe.js';
import type { ProbeOutcome } from '../../executors/models/session-options.js';
import { defaultModelsDir, modelDirs, scanModelFolders, type ModelFolderInfo } from '../../executors/models/catalog.js';
import { shmAddon } from '../../sidecar/shm/native.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The shared libraries onnxruntime-node's CUDA 12 provider loads (driver, runtime, cuBLAS, cuFFT, cuRAND, cuDNN) and TensorRT's. */
export const CUDA_LIBRARIES = ['libcuda.so.1', 'libcudart.so.12', 'libcublas.so.12', 'libcublasLt.so.12', 'libcufft.so.11', 'libcurand.so.10', 'libcudnn.so.9'] as const;
export const TENSORRT_LIBRARIES = ['libnvinfer.so.10'] as const;

export interface DoctorFacts {
  node: { version: string; required: string };
  npm: { version?: string; error?: string };
  sidecarAddon: { ok: boolean; error?: string };
  onnxruntime: { version?: string; bindingDir?: string; error?: string; providers: ProviderFiles[] };
  /** Absent when probing was skipped (--no-probe). */
  probes?: ProbeOutcome[];
  /** The provider executors use on GPUs ($CORNSERVE_EXECUTION_PROVIDER, default cuda). */
  executionProvider: GpuProvider;
  gpus: { found: Gpu[]; reason: string };
  cudaLibraries: { name: string; path?: string }[];
  vulkan: { loader?: string; devices: string[]; vulkaninfo: boolean; error?: string };
  llamaCpp: { nodeLlamaCpp?: string; binaries: string[] };
  redis: { version?: string; error?: string };
  shm: { path: string; bytes?: number; error?: string };
  models: { dir: string; folders: ModelFolderInfo[] }[];
}

export interface GatherOptions {
  /** Extra model directories (`--models`, colon-separated), as `cornserve up` takes them. */
  models?: string;
  probe: boolean;
  env?: NodeJS.ProcessEnv;
}

const message = (e: unknown) => ((e as NodeJS.ErrnoException).code === 'ENOENT' ? 'not found on PATH' : (e as Error).message.split('\n')[0]!);

async function commandVersion(file: string, args: string[], pick: (out: string) => string | undefined): Promise<{ version?: string; error?: string }> {
  try {
    const v = pick(await runCommand(file, args));
    return v ? { version: v } : { error: `${file} printed no version` };
  } catch (e) {
    return { error: message(e) };
  }
}

/** `ldconfig -p` lines: "\tlibcudart.so.12 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudart.so.12". */
export function parseLdconfig(text: string): Map<string, string> {
  const libs = new Map<string, string>();
  for (const m of text.matchAll(/^\s*(\S+)\s+\([^)]*\)\s+=>\s+(\S+)\s*$/gm)) if (!libs.has(m[1]!)) libs.set(m[1]!, m[2]!);
  return libs;
}

/** Where the dynamic loader finds `name`: LD_LIBRARY_PATH first, then the ldconfig cache. */
function locate(name: string, ldconfig: Map<string, string>, env: NodeJS.ProcessEnv): string | undefined {
  for (const d of (env.LD_LIBRARY_PATH ?? '').split(delimiter).filter(Boolean)) if (existsSync(join(d, name))) return join(d, name);
  return ldconfig.get(name);
}

function onnxruntimeFacts(): DoctorFacts['onnxruntime'] {
  try {
    const pkg = createRequire(import.meta.url).resolve('onnxruntime-node/package.json');
    const version = (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version;
    const bindingDir = ortBindingDir();
    return { version, bindingDir, providers: GPU_PROVIDERS.map((p) => providerFiles(p, bindingDir)) };
  } catch (e) {
    return { error: (e as Error).message, providers: [] };
  }
}

async function vulkanFacts(ldconfig: Map<string, string>, env: NodeJS.ProcessEnv): Promise<DoctorFacts['vulkan']> {
  const loader = locate('libvulkan.so.1', ldconfig, env);
  try {
    const out = await runCommand('vulkaninfo', ['--summary']);
    const devices = [...out.matchAll(/deviceName\s*=\s*(.+)/g)].map((m) => m[1]!.trim());
    return { ...(loader ? { loader } : {}), devices, vulkaninfo: true };
  } catch (e) {
    return { ...(loader ? { loader } : {}), devices: [], vulkaninfo: false, error: `vulkaninfo: ${message(e)}` };
  }
}

function llamaCppFacts(): DoctorFacts['llamaCpp'] {
  const scope = join(REPO, 'node_modules', '@node-llama-cpp');
  const binaries = existsSync(scope) ? readdirSync(scope).sort().map((d) => `@node-llama-cpp/${d}`) : [];
  const pkg = join(REPO, 'node_modules', 'node-llama-cpp', 'package.json');
  const nodeLlamaCpp = existsSync(pkg) ? (JSON.parse(readFileSync(pkg, 'utf8')) as { version: string }).version : undefined;
  return { ...(nodeLlamaCpp ? { nodeLlamaCpp } : {}), binaries };
}

function shmFacts(path = '/dev/shm'): DoctorFacts['shm'] {
  try {
    const s = statfsSync(path);
    return { path, bytes: s.bsize * s.blocks };
  } catch (e) {
    return { path, error: (e as Error).message };
  }
}

export async function gatherDoctorFacts(o: GatherOptions): Promise<DoctorFacts> {
  const env = o.env ?? process.env;
  const required = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
  const executionProvider = (env[EXECUTION_PROVIDER_ENV]?.trim() || 'cuda') as GpuProvider;
  let sidecarAddon: DoctorFacts['sidecarAddon'];
  try {
    shmAddon();
    sidecarAddon = { ok: true };
  } catch (e) {
    sidecarAddon = { ok: false, error: (e as Error).message };
  }
  const ldconfigText = await runCommand('ldconfig', ['-p']).catch(() => runCommand('/sbin/ldconfig', ['-p'])).catch(() => '');
  const ldconfig = parseLdconfig(ldconfigText);
  const dirs = [...modelDirs(o.models ? o.models.split(delimiter) : []), defaultModelsDir()];
  const [npm, redis, devices, vulkan, probes, models] = await Promise.all([
    commandVersion('npm', ['--version'], (out) => out.trim() || undefined),
    commandVersion('redis-server', ['--version'], (out) => /v=(\S+)/.exec(out)?.[1]),
    discoverDevices(),
    vulkanFacts(ldconfig, env),
    o.probe ? Promise.all(GPU_PROVIDERS.map((p) => probeProvider(p, 0))) : Promise.resolve(undefined),
    Promise.all([...new Set(dirs)].map(async (dir) => ({ dir, folders: await scanModelFolders(dir) }))),
  ]);
  return {
    node: { version: process.versions.node, required },
    npm,
    sidecarAddon,
    onnxruntime: onnxruntimeFacts(),
    ...(probes ? { probes } : {}),
    executionProvider,
    gpus: { found: devices.gpus, reason: devices.reason },
    cudaLibraries: [...CUDA_LIBRARIES, ...TENSORRT_LIBRARIES].map((name) => {
      const path = locate(name, ldconfig, env);
      return path ? { name, path } : { name };
    }),
    vulkan,
    llamaCpp: llamaCppFacts(),
    redis,
    shm: shmFacts(),
    models,
  };
}
