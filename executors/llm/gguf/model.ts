/**
 * A GGUF model on llama.cpp (node-llama-cpp): finding the file a task's model id names, checking it before
 * llama.cpp loads it (a readable GGUF header, data that is all there, an architecture llama.cpp knows, memory
 * within what was asked), choosing the binary (CPU, CUDA or Vulkan) and loading model + one context with one
 * sequence per batch slot. Every refusal is a GgufError with a stable code; the executor exits with it.
 */
import { readdir, stat } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { Logger } from '../../../lib/log.js';
import type { GgufBinary } from '../../../policies/gguf-binary.js';
import { GgufInsights, LlamaLogLevel, getLlama, readGgufFileInfo, type Llama, type LlamaContext, type LlamaModel } from 'node-llama-cpp';

export const GgufErrorCode = {
  NOT_FOUND: 'GGUF_NOT_FOUND',
  /** Not a GGUF file, or its header does not parse. */
  INVALID: 'GGUF_INVALID',
  /** The header names more tensor data than the file holds (a partial download or copy). */
  TRUNCATED: 'GGUF_TRUNCATED',
  ARCHITECTURE_UNSUPPORTED: 'GGUF_ARCHITECTURE_UNSUPPORTED',
  /** The model and its context need more memory than the executor was given. */
  TOO_LARGE: 'GGUF_TOO_LARGE',
  /** A GPU binary was asked for and does not load here (package or driver libraries missing). */
  GPU_UNAVAILABLE: 'GGUF_GPU_UNAVAILABLE',
  LOAD_FAILED: 'GGUF_LOAD_FAILED',
} as const;
export type GgufErrorCode = (typeof GgufErrorCode)[keyof typeof GgufErrorCode];

export class GgufError extends Error {
  override readonly name = 'GgufError';
  constructor(readonly code: GgufErrorCode, message: string, options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
  }
}

export type GgufGpu = GgufBinary;
export const GGUF_GPUS: readonly GgufGpu[] = ['cpu', 'cuda', 'vulkan'];

/** The npm package holding each binary (installed as node-llama-cpp's optional dependencies). */
export const GGUF_BINARY_PACKAGE: Record<GgufGpu, string> = {
  cpu: '@node-llama-cpp/linux-x64', cuda: '@node-llama-cpp/linux-x64-cuda', vulkan: '@node-llama-cpp/linux-x64-vulkan',
};

const isFile = (p: string) => stat(p).then((s) => s.isFile(), () => false);
const isDir = (p: string) => stat(p).then((s) => s.isDirectory(), () => false);

/** The one `.gguf` file a path names: the file itself, or the only one in a folder; undefined when neither. */
async function ggufAt(p: string): Promise<string | undefined> {
  if (await isFile(p)) return p;
  if (!(await isDir(p))) return undefined;
  const files = (await readdir(p)).filter((f) => f.toLowerCase().endsWith('.gguf')).sort();
  if (files.length > 1) throw new GgufError(GgufErrorCode.NOT_FOUND, `${p} holds several GGUF files (${files.join(', ')}): name one as the model id`);
  return files.length ? join(p, files[0]!) : undefined;
}

/**
 * The GGUF file a model id names: a path (absolute, or relative that exists), else `<dir>/<modelId>` under each
 * model directory in order (a `.gguf` file, or a folder holding exactly one).
 */
export async function resolveGguf(modelId: string, dirs: readonly string[]): Promise<string> {
  if (isAbsolute(modelId) || modelId.startsWith('.')) {
    const hit = await ggufAt(resolve(modelId));
    if (hit) return hit;
  } else {
    for (const d of dirs) {
      const hit = await ggufAt(join(d, modelId));
      if (hit) return hit;
    }
  }
  throw new GgufError(GgufErrorCode.NOT_FOUND, `'${modelId}' is neither a .gguf file nor a folder holding one (searched: ${isAbsolute(modelId) || modelId.startsWith('.') ? resolve(modelId) : dirs.map((d) => join(d, modelId)).join(', ') || 'no model directories'})`);
}

export interface GgufCheck {
  architecture: string;
  /** The context the model was trained with (its metadata), if it says. */
  trainContext: number | undefined;
  /** Estimated bytes of the model plus a context of `contextSize` × `sequences`. */
  memoryBytes: number;
}

/**
 * Checks a GGUF file before loading it: header, data length, architecture, memory (model + context of
 * `contextSize` per sequence, all on the host: the larger of the two placements) against `memoryLimitBytes`.
 */
export async function checkGguf(llama: Llama, path: string, opts: { contextSize: number; sequences: number; memoryLimitBytes: number }): Promise<GgufCheck> {
  let info;
  try {
    info = await readGgufFileInfo(path, { readTensorInfo: true, logWarnings: false });
  } catch (e) {
    throw new GgufError(GgufErrorCode.INVALID, `${path} is not a readable GGUF file: ${(e as Error).message}`, { cause: e });
  }
  const insights = await GgufInsights.from(info, llama);
  const architecture = String(info.metadata.general?.architecture ?? '');
  if (!insights.isSupportedByLlamaCpp) {
    throw new GgufError(GgufErrorCode.ARCHITECTURE_UNSUPPORTED, `${path}: architecture '${architecture}' is not one this llama.cpp build knows`);
  }
  const size = (await stat(path)).size;
  const needed = info.metadataSize + (info.tensorInfoSize ?? 0) + insights.modelSize;
  if (size < needed) {
    throw new GgufError(GgufErrorCode.TRUNCATED, `${path} is truncated: ${size} bytes, its header describes at least ${needed}`);
  }
  const model = insights.estimateModelResourceRequirements({ gpuLayers: 0 });
  const ctx = insights.estimateContextResourceRequirements({ contextSize: opts.contextSize, sequences: opts.sequences, modelGpuLayers: 0 });
  const memoryBytes = model.cpuRam + model.gpuVram + ctx.cpuRam + ctx.gpuVram;
  if (memoryBytes > opts.memoryLimitBytes) {
    throw new GgufError(GgufErrorCode.TOO_LARGE, `${path} needs about ${mib(memoryBytes)} MiB (model ${mib(model.cpuRam + model.gpuVram)} MiB + context of ${opts.sequences} × ${opts.contextSize} tokens ${mib(ctx.cpuRam + ctx.gpuVram)} MiB); this executor was given ${mib(opts.memoryLimitBytes)} MiB`);
  }
  const trainContext = insights.trainContextSize;
  return { architecture, trainContext, memoryBytes };
}

/**
 * The first of `order` (policies/gguf-binary.ts) whose binary loads; a GPU binary that does not load is logged
 * and the next tried. When none loads, the last refusal, naming every binary tried.
 */
export async function loadFirstLlama(order: readonly GgufGpu[], devices: readonly number[], log?: Logger): Promise<{ llama: Llama; gpu: GgufGpu }> {
  const refusals: string[] = [];
  for (const [i, gpu] of order.entries()) {
    try {
      return { llama: await loadLlama(gpu, devices), gpu };
    } catch (e) {
      if (!(e instanceof GgufError)) throw e;
      const why = e.message.slice(e.code.length + 2);
      if (i === order.length - 1) throw refusals.length ? new GgufError(e.code, [...refusals, why].join('; '), { cause: e }) : e;
      log?.warn({ gpu, next: order[i + 1] }, why);
      refusals.push(why);
    }
  }
  throw new Error('loadFirstLlama: no binary to try');
}

const mib = (b: number) => Math.ceil(b / 2 ** 20);

/**
 * llama.cpp with the binary for `gpu`, from the prebuilt npm packages only (never built or downloaded here).
 * `devices` (ordinals as this process sees them) are made the only visible ones for CUDA.
 */
export async function loadLlama(gpu: GgufGpu, devices: readonly number[] = []): Promise<Llama> {
  if (gpu === 'cuda' && devices.length) process.env.CUDA_VISIBLE_DEVICES = devices.join(',');
  // ggml's Vulkan backend numbers the devices as the Vulkan loader lists them (usually, not always, nvidia-smi's order).
  if (gpu === 'vulkan' && devices.length) process.env.GGML_VK_VISIBLE_DEVICES = devices.join(',');
  try {
    return await getLlama({ gpu: gpu === 'cpu' ? false : gpu, build: 'never', usePrebuiltBinaries: true, progressLogs: false, skipDownload: true, logLevel: LlamaLogLevel.error });
  } catch (e) {
    if (gpu === 'cpu') throw new GgufError(GgufErrorCode.LOAD_FAILED, `the llama.cpp CPU binary (${GGUF_BINARY_PACKAGE.cpu}) does not load: ${(e as Error).message}`, { cause: e });
    throw new GgufError(GgufErrorCode.GPU_UNAVAILABLE, `the llama.cpp ${gpu} binary does not load: ${(e as Error).message}. It needs the npm package ${GGUF_BINARY_PACKAGE[gpu]} (\`npm ci\` installs it on linux x64) and the ${gpu === 'cuda' ? 'NVIDIA driver with CUDA 12 runtime libraries (libcudart, libcublas)' : 'GPU\'s Vulkan driver (libvulkan1 and a vendor ICD)'}`, { cause: e });
  }
}

export interface LoadedGguf {
  llama: Llama;
  model: LlamaModel;
  context: LlamaContext;
  path: string;
  check: GgufCheck;
  contextSize: number;
  close(): Promise<void>;
}

/** Checks and loads `path` with a context of `sequences` sequences of `contextSize` tokens each. */
export async function loadGguf(llama: Llama, path: string, opts: { contextSize: number; sequences: number; memoryLimitBytes: number; /** 0 = one per core. */ threads?: number }): Promise<LoadedGguf> {
  const check = await checkGguf(llama, path, opts);
  const contextSize = Math.min(opts.contextSize, check.trainContext ?? opts.contextSize);
  let model: LlamaModel;
  try {
    model = await llama.loadModel({ modelPath: path, gpuLayers: llama.gpu ? 'max' : 0 });
  } catch (e) {
    throw new GgufError(GgufErrorCode.LOAD_FAILED, `llama.cpp could not load ${path}: ${(e as Error).message}`, { cause: e });
  }
  let context: LlamaContext;
  try {
    context = await model.createContext({ contextSize, sequences: opts.sequences, ...(opts.threads !== undefined ? { threads: opts.threads } : {}) });
  } catch (e) {
    await model.dispose();
    throw new GgufError(GgufErrorCode.LOAD_FAILED, `llama.cpp could not create a context of ${opts.sequences} × ${contextSize} tokens for ${path}: ${(e as Error).message}`, { cause: e });
  }
  return {
    llama, model, context, path, check, contextSize,
    async close() {
      await context.dispose();
      await model.dispose();
    },
  };
}
