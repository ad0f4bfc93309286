/**
 * `cornserve doctor [--json] [--models DIRS] [--no-probe]`: what this machine has for serving, and what it lacks.
 * The facts come from doctor-facts.ts; `doctorProblems` (pure) turns them into numbered problems, each with its
 * fix. Exit 1 when there is at least one problem, 0 otherwise. A machine without GPUs is not a problem (executors
 * run on the CPU); a machine with NVIDIA GPUs whose chosen provider cannot run on them is.
 */
import { nodeVersionProblem } from './node-version.js';
import { gatherDoctorFacts, TENSORRT_LIBRARIES, type DoctorFacts } from './doctor-facts.js';
import { installFix } from '../../executors/models/providers.js';
import { ADDON_BUILD_COMMAND } from '../../sidecar/shm/native.js';
import type { Io } from '../../lib/io.js';

export interface Problem {
  problem: string;
  fix: string;
}

/** Below this, a few image or KV-cache transfers fill /dev/shm (Docker's default is 64 MiB). */
export const MIN_SHM_BYTES = 1 << 30;

const gib = (b: number) => `${(b / 2 ** 30).toFixed(1)} GiB`;

export function doctorProblems(f: DoctorFacts): Problem[] {
  const out: Problem[] = [];
  const nodeProblem = nodeVersionProblem(f.node.version, f.node.required);
  if (nodeProblem) out.push({ problem: `Node ${f.node.version} is too old (needs ${f.node.required})`, fix: 'install Node.js 20.19 or newer' });
  if (!f.npm.version) out.push({ problem: `npm: ${f.npm.error}`, fix: 'install npm (it comes with Node.js)' });
  if (!f.sidecarAddon.ok) out.push({ problem: `the sidecar's shared-memory addon does not load: ${f.sidecarAddon.error}`, fix: `${ADDON_BUILD_COMMAND} (needs python3, make and g++), or make deps` });
  if (f.onnxruntime.error) out.push({ problem: `onnxruntime-node: ${f.onnxruntime.error}`, fix: 'npm ci' });
  if (!f.redis.version) out.push({ problem: `redis-server: ${f.redis.error}`, fix: 'install Redis 7 (Debian/Ubuntu: apt-get install redis-server, or make redis-server); `cornserve up --redis` and the tests start it' });
  if (f.shm.bytes === undefined) out.push({ problem: `${f.shm.path}: ${f.shm.error}`, fix: 'mount a tmpfs on /dev/shm (the sidecar passes tensors through it)' });
  else if (f.shm.bytes < MIN_SHM_BYTES) out.push({ problem: `${f.shm.path} is ${gib(f.shm.bytes)} (less than ${gib(MIN_SHM_BYTES)}): large tensors between executors will not fit`, fix: 'enlarge it (docker run --shm-size=8g; Kubernetes: an emptyDir with medium Memory; a host: mount -o remount,size=8G /dev/shm)' });
  for (const m of f.models) {
    if (!m.folders.length) out.push({ problem: `model folder ${m.dir} holds no model (no manifest.json or Hugging Face export one or two levels down)`, fix: `put exported models there, or build the project's own with make models; or leave it out of --models / $CORNSERVE_MODELS` });
    for (const bad of m.folders.filter((x) => x.error)) out.push({ problem: `model ${bad.dir} cannot be used: ${bad.error}`, fix: `cornserve models check ${bad.dir} lists every problem` });
  }
  const provider = f.executionProvider;
  const probe = f.probes?.find((p) => p.provider === provider);
  // WebGPU runs on any Vulkan GPU; CUDA and TensorRT only matter where nvidia-smi lists GPUs.
  const gpuMachine = provider === 'webgpu' || f.gpus.found.length > 0;
  if (gpuMachine) {
    const files = f.onnxruntime.providers.find((p) => p.provider === provider);
    if (files && !files.installed) out.push({ problem: `${provider} execution provider not installed: ${files.missing.join(', ')} missing from ${files.dir}`, fix: installFix(provider) });
    if (probe && !probe.ok) out.push({ problem: `the ${provider} probe session failed on device ${probe.ordinal}${probe.missing ? ` (missing: ${probe.missing})` : ''}: ${probe.error}`, fix: probe.fix });
    if (!probe && provider !== 'webgpu') {
      const wanted = f.cudaLibraries.filter((l) => provider === 'tensorrt' || !(TENSORRT_LIBRARIES as readonly string[]).includes(l.name));
      const absent = wanted.filter((l) => !l.path).map((l) => l.name);
      if (absent.length) out.push({ problem: `GPUs found but the loader cannot find ${absent.join(', ')}`, fix: 'install the NVIDIA driver, the CUDA 12 runtime and cuDNN 9 (or use a nvidia/cuda:12.x-cudnn-runtime image)' });
    }
  }
  return out;
}

const yes = (ok: boolean) => (ok ? 'ok' : 'NO');

export function renderDoctor(f: DoctorFacts, problems: Problem[]): string[] {
  const lines = [
    `node          ${f.node.version} (needs ${f.node.required})`,
    `npm           ${f.npm.version ?? f.npm.error}`,
    `sidecar addon ${f.sidecarAddon.ok ? 'ok' : f.sidecarAddon.error}`,
    `onnxruntime   ${f.onnxruntime.version ? `onnxruntime-node ${f.onnxruntime.version}, binding ${f.onnxruntime.bindingDir}` : f.onnxruntime.error}`,
    ...f.onnxruntime.providers.map((p) => `  ${p.provider.padEnd(9)} libraries: ${p.found.length + p.missing.length === 0 ? 'built in' : `${yes(p.installed)}${p.found.length ? ` (found ${p.found.join(', ')})` : ''}${p.missing.length ? ` (missing ${p.missing.join(', ')})` : ''}`}`),
    ...(f.probes ?? []).map((p) => `  ${p.provider.padEnd(9)} probe on device ${p.ordinal}: ${p.ok ? 'ok' : `failed: ${p.missing ? `missing ${p.missing}` : p.error.split(' | ')[0]!.slice(0, 200)}; fix: ${p.fix}`}`),
    ...(f.probes ? [] : ['  probes       skipped (--no-probe)']),
    `execution provider on GPUs: ${f.executionProvider}`,
    `gpus          ${f.gpus.found.length ? f.gpus.found.map((g) => `${g.index}: ${g.name} ${g.memoryMiB} MiB`).join('; ') : `none (${f.gpus.reason})`}`,
    `cuda libs     ${f.cudaLibraries.map((l) => `${l.name} ${l.path ? 'found' : 'absent'}`).join(', ')}`,
    `vulkan        loader ${f.vulkan.loader ?? 'absent (libvulkan.so.1)'}; ${f.vulkan.vulkaninfo ? `devices: ${f.vulkan.devices.join(', ') || 'none'}` : f.vulkan.error}`,
    `llama.cpp     ${f.llamaCpp.nodeLlamaCpp ? `node-llama-cpp ${f.llamaCpp.nodeLlamaCpp}` : 'node-llama-cpp not installed'}; binaries: ${f.llamaCpp.binaries.join(', ') || 'none'}`,
    `redis         ${f.redis.version ? `redis-server ${f.redis.version}` : f.redis.error}`,
    `/dev/shm      ${f.shm.bytes !== undefined ? gib(f.shm.bytes) : f.shm.error}`,
    'models',
    ...f.models.map((m) => `  ${m.dir}: ${m.folders.length ? m.folders.map((x) => `${x.name} (${x.error ? 'invalid' : x.family})`).join(', ') : 'no model folders'}`),
  ];
  if (!problems.length) return [...lines, '', 'no problems found'];
  return [...lines, '', `${problems.length} problem(s):`, ...problems.map((p, i) => `${i + 1}. ${p.problem}\n   fix: ${p.fix}`)];
}

export interface DoctorOptions {
  json?: boolean;
  models?: string;
  probe: boolean;
}

/** Prints the report (text or JSON); sets exit code 1 when there are problems. */
export async function doctorCommand(o: DoctorOptions, io: Io): Promise<Problem[]> {
  const facts = await gatherDoctorFacts({ probe: o.probe, ...(o.models ? { models: o.models } : {}) });
  const problems = doctorProblems(facts);
  if (o.json) io.out(JSON.stringify({ ...facts, problems }, null, 2));
  else for (const l of renderDoctor(facts, problems)) io.out(l);
  if (problems.length) process.exitCode = 1;
  return problems;
}
