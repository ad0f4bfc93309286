/**
 * Which GPU execution providers this onnxruntime-node has, judged from the files beside its binding, and what to
 * do when one is missing or cannot run. No onnxruntime import: the executor image's build check, `cornserve doctor`
 * and the executors' start-up all read this without loading the runtime.
 *
 * onnxruntime-node's `listSupportedBackends()` cannot answer the question: its `bundled` flag is a constant of the
 * binding (what ships inside the npm tarball), false for cuda and tensorrt whether or not their libraries were
 * installed. The CUDA and TensorRT providers are shared libraries its install script downloads next to the binding
 * (`ONNXRUNTIME_NODE_INSTALL=cuda12`); onnxruntime loads them from there when a session asks for the provider.
 * WebGPU (Dawn over Vulkan) is compiled into libonnxruntime itself; whether it runs depends on the machine's
 * Vulkan loader and driver, which only a session can tell (provider-probe.ts).
 */
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export type GpuProvider = 'cuda' | 'tensorrt' | 'webgpu';
export const GPU_PROVIDERS: readonly GpuProvider[] = ['cuda', 'tensorrt', 'webgpu'];
/** Which provider an executor uses on its GPUs (default cuda); `cornserve up --execution-provider` sets it. */
export const EXECUTION_PROVIDER_ENV = 'CORNSERVE_EXECUTION_PROVIDER';

/**
 * The libraries each provider loads from the binding folder (onnxruntime-node's install manifest for linux/x64
 * cuda12 installs all three). TensorRT falls back to CUDA for the nodes it does not take, so it needs both.
 */
export const PROVIDER_LIBRARIES: Readonly<Record<GpuProvider, readonly string[]>> = {
  cuda: ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'],
  tensorrt: ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_tensorrt.so', 'libonnxruntime_providers_cuda.so'],
  webgpu: [],
};

export const ORT_CUDA_INSTALL = 'ONNXRUNTIME_NODE_INSTALL=cuda12 npm ci';

/** The folder holding onnxruntime_binding.node (bin/napi-v*\/<platform>/<arch> of the installed package). */
export function ortBindingDir(): string {
  const pkg = dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
  const bin = join(pkg, 'bin');
  const napi = readdirSync(bin).filter((d) => d.startsWith('napi-v')).sort().reverse();
  for (const v of napi) {
    const dir = join(bin, v, process.platform, process.arch);
    if (existsSync(join(dir, 'onnxruntime_binding.node'))) return dir;
  }
  throw new Error(`onnxruntime-node at ${pkg} has no binding for ${process.platform}/${process.arch}`);
}

export interface ProviderFiles {
  provider: GpuProvider;
  /** Every library the provider needs is in `dir`. */
  installed: boolean;
  dir: string;
  found: string[];
  missing: string[];
}

/** Which of `provider`'s libraries are in the binding folder `dir`. */
export function providerFiles(provider: GpuProvider, dir: string = ortBindingDir()): ProviderFiles {
  const found: string[] = [];
  const missing: string[] = [];
  for (const f of PROVIDER_LIBRARIES[provider]) (existsSync(join(dir, f)) ? found : missing).push(f);
  return { provider, installed: missing.length === 0, dir, found, missing };
}

/** The fix for provider files missing from the binding folder. */
export function installFix(provider: GpuProvider): string {
  if (provider === 'webgpu') return 'onnxruntime-node >= 1.22 bundles WebGPU on Linux x64; reinstall it (npm ci)';
  return `reinstall onnxruntime-node with its CUDA 12 provider: ${ORT_CUDA_INSTALL} (or npm install onnxruntime-node --onnxruntime-node-install=cuda12); its install script downloads the provider libraries from NuGet`;
}

export interface ProbeDiagnosis {
  /** The library or component onnxruntime could not find, when its message names one. */
  missing?: string;
  fix: string;
}

/**
 * What a failed probe's onnxruntime text (its exception and its log lines) means and how to fix it. The texts
 * are onnxruntime's and the dynamic loader's own ("libcudnn.so.9: cannot open shared object file", Dawn's
 * "Couldn't load Vulkan", "No supported adapters").
 */
export function diagnoseProbeFailure(provider: GpuProvider, text: string): ProbeDiagnosis {
  const lib = /(lib[\w.+-]+\.so(?:\.[\d.]+)?): cannot open shared object file/.exec(text)?.[1];
  if (provider === 'webgpu') {
    if (lib?.startsWith('libvulkan')) return { missing: lib, fix: 'install the Vulkan loader (Debian/Ubuntu: apt-get install libvulkan1) and the GPU\'s Vulkan driver (NVIDIA: the driver\'s libnvidia-vulkan / nvidia_icd.json; AMD/Intel: mesa-vulkan-drivers)' };
    if (/shaderUniform\S*ArrayDynamicIndexing|No supported adapters|Failed to get a WebGPU adapter/.test(text)) {
      return { missing: 'a Vulkan GPU adapter Dawn accepts', fix: 'run on a machine with a GPU and its vendor Vulkan driver (vulkaninfo lists it); software Vulkan such as mesa lavapipe is refused by Dawn' };
    }
    return { fix: 'check the GPU\'s Vulkan driver (vulkaninfo) and onnxruntime\'s message above' };
  }
  if (lib) {
    if (/^libonnxruntime_providers_/.test(lib)) return { missing: lib, fix: installFix(provider) };
    if (/^libcuda\.so/.test(lib)) return { missing: lib, fix: 'install the NVIDIA driver (libcuda.so.1 comes with it; in a container, run with the NVIDIA container runtime)' };
    if (/^libcudnn/.test(lib)) return { missing: lib, fix: 'install cuDNN 9 for CUDA 12 (e.g. apt-get install libcudnn9-cuda-12, or a nvidia/cuda:12.x-cudnn-runtime base image)' };
    if (/^libnvinfer|^libnvonnxparser/.test(lib)) return { missing: lib, fix: 'install TensorRT 10 for CUDA 12 (libnvinfer10), or use the cuda provider instead' };
    if (/^libcu|^libnv|^libcufft|^libcurand/.test(lib)) return { missing: lib, fix: 'install the CUDA 12 runtime libraries (e.g. apt-get install cuda-libraries-12-x, or a nvidia/cuda:12.x-cudnn-runtime base image) and make them visible to the loader (ldconfig or LD_LIBRARY_PATH)' };
    return { missing: lib, fix: `install ${lib} and make it visible to the loader (ldconfig or LD_LIBRARY_PATH)` };
  }
  if (/no CUDA-capable device|CUDA driver version is insufficient|cudaErrorNoDevice|invalid device ordinal/i.test(text)) {
    return { fix: 'check the GPU and driver with nvidia-smi; the device ordinal must be one the process sees (CUDA_VISIBLE_DEVICES)' };
  }
  return { fix: 'read onnxruntime\'s message above; cornserve doctor lists what this machine has' };
}
